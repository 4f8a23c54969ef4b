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

std::unordered_map<std::int32_t, std::vector<std::size_t>> graph_replay_nodes(const TraceIndex& index) {
  std::unordered_map<std::int32_t, std::vector<std::size_t>> out;
  const Trace& t = index.trace();
  for (std::size_t i = 0; i < index.activities().size(); ++i) {
    const std::int32_t l = index.activities()[i].launch;
    if (l != kNone && t.name(t.events[static_cast<std::size_t>(l)]).find("GraphLaunch") != std::string_view::npos)
      out[l].push_back(i);  // activities are by GPU start
  }
  return out;
}

std::string replay_key(const TraceIndex& index, const std::vector<std::size_t>& nodes) {
  std::string key;
  for (const std::size_t i : nodes) {
    const Event& e = index.event(index.activities()[i]);
    key += index.trace().name(e);
    if (const GpuArgs* g = index.trace().args(e))
      key += fmt::format("|{},{},{}|{},{},{}|{}", g->grid[0], g->grid[1], g->grid[2], g->block[0], g->block[1],
                         g->block[2], g->bytes);
    key += ';';
  }
  return key;
}

CapturedShapes captured_shapes(const TraceIndex& other, const AttentionView& view, std::string label) {
  CapturedShapes out;
  out.trace = std::move(label);
  const auto nodes_of = graph_replay_nodes(other);
  for (const AttentionCall& c : view.calls) {
    if (!c.graph_replay || !c.shape.at_capture || !c.shape.known()) continue;
    const std::size_t first = c.activities.front();
    const auto nodes = nodes_of.find(other.activities()[first].launch);
    if (nodes == nodes_of.end()) continue;
    const std::string key = replay_key(other, nodes->second);
    const auto at = std::find(nodes->second.begin(), nodes->second.end(), first);
    const auto node = static_cast<std::size_t>(at - nodes->second.begin());
    auto& graph = out.graphs[key];
    const auto [it, added] = graph.emplace(node, CapturedShapes::Node{c.shape, c.precision});
    if (!added && !(it->second.shape == c.shape && it->second.precision == c.precision)) out.ambiguous.insert(key);
  }
  return out;
}

}  // namespace attnprof
