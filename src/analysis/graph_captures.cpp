#include "analysis/graph_captures.h"

#include <algorithm>

#include <fmt/format.h>

namespace attnprof {

const CapturedShapes::Node* CapturedShapes::find(const std::string& key, std::size_t node) const {
  if (ambiguous.contains(key)) return nullptr;
  const auto g = graphs.find(key);
  if (g == graphs.end()) return nullptr;
  const auto n = g->second.find(node);
  return n == g->second.end() ? nullptr : &n->second;
}

ReplayNodes::ReplayNodes(const TraceIndex& index) : index_(index) {
  for (std::size_t i = 0; i < index.activities().size(); ++i)
    if (index.graph_replayed(i)) nodes_[index.activities()[i].launch].push_back(i);  // activities are by GPU start
}

std::optional<ReplayNodes::At> ReplayNodes::at(std::size_t activity) const {
  const auto nodes = nodes_.find(index_.activities()[activity].launch);
  if (nodes == nodes_.end()) return std::nullopt;
  At out{{},
         static_cast<std::size_t>(std::find(nodes->second.begin(), nodes->second.end(), activity) -
                                  nodes->second.begin())};
  for (const std::size_t i : nodes->second) {
    const Event& e = index_.event(index_.activities()[i]);
    out.key += index_.trace().name(e);
    if (const GpuArgs* g = index_.trace().args(e))
      out.key += fmt::format("|{},{},{}|{},{},{}|{}", g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1],
                             g->block[2], g->bytes);
    out.key += ';';
  }
  return out;
}

CapturedShapes captured_shapes(const TraceIndex& other, const AttentionView& view, std::string label) {
  CapturedShapes out;
  out.trace = std::move(label);
  const ReplayNodes replays(other);
  for (const AttentionCall& c : view.calls) {
    if (!c.graph_replay || !c.shape.at_capture || !c.shape.known()) continue;
    const std::optional<ReplayNodes::At> at = replays.at(c.activities.front());
    if (!at) continue;
    const auto [it, added] = out.graphs[at->key].emplace(at->node, CapturedShapes::Node{c.shape, c.precision});
    if (!added && !(it->second.shape == c.shape && it->second.precision == c.precision)) out.ambiguous.insert(at->key);
  }
  return out;
}

}  // namespace attnprof
