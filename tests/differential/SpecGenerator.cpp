#include "tests/differential/GeneratorCore.h"

namespace collc::differential {
namespace detail {

std::string Generator::render(const std::string& name) {
  std::string text = "# generated: " + d_.kind + " " + d_.pattern + "\n";
  text += "collective " + name + " kind " + d_.kind + "\n";
  if (d_.lo != 2 || d_.hi != 8 || rng_.chance(50))
    text += "  ranks " + std::to_string(d_.lo) + ".." + std::to_string(d_.hi) + "\n";
  if (!d_.rows.empty())
    text += "  rows " + d_.rows + "\n";
  const bool blocked = d_.kind == "allgather" || d_.kind == "alltoall";
  const bool scattered = d_.kind == "reducescatter" || d_.kind == "alltoall";
  text += "  buffers " + d_.in + ": T[" + (scattered ? "n * nranks" : "n") + "], " + d_.out +
          ": T[" + (blocked ? "n * nranks" : "n") + "]";
  for (const auto& aux : d_.aux)
    text += ", " + aux;
  text += "\n";
  for (const auto& scratch : d_.scratch)
    text += "  scratch " + scratch + "\n";
  const std::string sync = rng_.oneOf(d_.syncs);
  d_.choose("sync=" + sync);
  if (sync != "barrier" || rng_.chance(70))
    text += "  sync " + sync + "\n";
  if (rng_.chance(60)) {
    std::string launch;
    if (rng_.chance(70))
      launch += " blocks=" + rng_.oneOf({"1", "2", "4", "8", "16", "32", "132"});
    if (rng_.chance(60))
      launch += " threads=" + rng_.oneOf({"32", "64", "128", "256", "512", "1024"});
    if (rng_.chance(60))
      launch += " vector=" + rng_.oneOf({"2", "4", "8", "16"});
    if (rng_.chance(30))
      launch += " unroll=" + std::to_string(rng_.pick(1, 8));
    if (rng_.chance(20))
      launch += " whole_stores=" + std::to_string(rng_.pick(0, 1));
    if (!launch.empty()) {
      text += "  launch" + launch + "\n";
      d_.choose("launch");
    }
  }
  text += "{\n" + d_.body.text() + "}\n";
  return text;
}

GeneratedSpec Generator::run(uint64_t seed) {
  struct Pattern {
    const char* kind;
    void (Generator::*make)();
  };
  // Every kind about equally often, then one of its patterns.
  static const std::vector<std::vector<Pattern>> kinds = {
      {{"allreduce", &Generator::allreduceOneshot},
       {"allreduce", &Generator::allreduceOneshot},
       {"allreduce", &Generator::allreduceOneshot},
       {"allreduce", &Generator::allreduceTwoshot},
       {"allreduce", &Generator::allreduceTwoshot},
       {"allreduce", &Generator::allreduceRing},
       {"allreduce", &Generator::allreduceHub},
       {"allreduce", &Generator::allreduceAtomic}},
      {{"allgather", &Generator::allgatherDirect},
       {"allgather", &Generator::allgatherDirect},
       {"allgather", &Generator::allgatherRing}},
      {{"reducescatter", &Generator::reducescatterDirect},
       {"reducescatter", &Generator::reducescatterDirect},
       {"reducescatter", &Generator::reducescatterRing}},
      {{"broadcast", &Generator::broadcastDirect},
       {"broadcast", &Generator::broadcastChain},
       {"broadcast", &Generator::broadcastScatterGather}},
      {{"reduce", &Generator::reduceDirect},
       {"reduce", &Generator::reduceChain},
       {"reduce", &Generator::reduceScatterGather}},
      {{"alltoall", &Generator::alltoallDirect},
       {"alltoall", &Generator::alltoallDirect},
       {"alltoall", &Generator::alltoallPairwise}},
  };
  // Allreduce, with the most patterns, twice as often as the others.
  const int draw = rng_.pick(0, int(kinds.size()));
  const auto& patterns = kinds[size_t(draw == int(kinds.size()) ? 0 : draw)];
  const Pattern& pattern = patterns[size_t(rng_.pick(0, int(patterns.size()) - 1))];
  d_.kind = pattern.kind;
  if (rng_.chance(15)) {
    // Other names for the user's buffers now and then.
    d_.in = rng_.oneOf({"src", "input", "x"});
    d_.out = rng_.oneOf({"dst", "output", "y"});
  }
  (this->*pattern.make)();

  GeneratedSpec spec;
  spec.name = "gen" + std::to_string(seed) + "_" + d_.kind;
  spec.text = render(spec.name);
  spec.shape =
      d_.kind + " " + d_.pattern + " ranks " + std::to_string(d_.lo) + ".." + std::to_string(d_.hi);
  for (const auto& choice : d_.choices)
    spec.shape += " " + choice;
  return spec;
}

} // namespace detail

GeneratedSpec generateSpec(uint64_t seed) {
  return detail::Generator(seed).run(seed);
}

} // namespace collc::differential
