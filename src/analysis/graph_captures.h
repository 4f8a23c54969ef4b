// Shapes of CUDA graph replays whose capture a second trace holds (doctor --capture-trace): a graph
// captured before the analysed trace began, in a trace of the warm-up (the first compiled calls). The
// second trace's replays matched to their capture (TraceIndex::capture_range) give, node by node, the
// shapes of their attention calls, keyed by how the replay ran its nodes (kernel names, grids, blocks,
// copy sizes); a replay of the analysed trace that ran alike takes the shape of the call at its node,
// said so with the second trace's name. A key whose replays gave other shapes at one node is dropped:
// never another graph's shape.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/attention.h"

namespace attnprof {

struct CapturedShapes {
  std::string trace;  // the second trace's label, for the calls' shape source
  struct Node {
    AttentionShape shape;  // its op's inputs at the capture (the second trace's string pool: keep it alive)
    Precision precision = Precision::Unknown;
  };
  std::unordered_map<std::string, std::map<std::size_t, Node>> graphs;  // replay key -> node -> its call's shape
  std::set<std::string> ambiguous;                                      // keys whose replays disagreed
  const Node* find(const std::string& key, std::size_t node) const;
};

// From the second trace's index and its attention view.
CapturedShapes captured_shapes(const TraceIndex& other, const AttentionView& view, std::string label);

// The CUDA graph replays of a trace, each its GPU work by start, and where an activity sits in its
// replay: the replay's key (how it ran its nodes: kernel names, grids, blocks, copy sizes, comparable
// across traces) and the activity's node.
class ReplayNodes {
 public:
  explicit ReplayNodes(const TraceIndex& index);
  struct At {
    std::string key;
    std::size_t node;
  };
  std::optional<At> at(std::size_t activity) const;

 private:
  const TraceIndex& index_;
  std::unordered_map<std::int32_t, std::vector<std::size_t>> nodes_;  // by graph launch call
};

}  // namespace attnprof
