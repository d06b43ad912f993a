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
    if (rng_.chance(30)) {
      const int unroll = rng_.pick(1, 8);
      if (d_.rows.empty()) // row steps go one row at a time
        launch += " unroll=" + std::to_string(unroll);
    }
    if (rng_.chance(20))
      launch += " whole_stores=" + std::to_string(rng_.pick(0, 1));
    if (!launch.empty()) {
      text += "  launch" + launch + "\n";
      d_.choose("launch");
    }
  }
  text += "{\n";
  headerLines_ = int(std::count(text.begin(), text.end(), '\n'));
  text += d_.body.text() + "}\n";
  return text;
}

std::string Generator::where(Spot spot) const {
  if (!spot.valid())
    return "";
  return std::to_string(headerLines_ + 1 + spot.line) + ":" + std::to_string(spot.column);
}

GeneratedSpec Generator::finish(uint64_t seed) {
  GeneratedSpec spec;
  spec.name = "gen" + std::to_string(seed) + "_" + d_.kind;
  spec.text = render(spec.name);
  spec.shape =
      d_.kind + " " + d_.pattern + " ranks " + std::to_string(d_.lo) + ".." + std::to_string(d_.hi);
  for (const auto& choice : d_.choices)
    spec.shape += " " + choice;
  spec.sumOnlyAt = where(d_.sumOnly);
  return spec;
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
       {"allreduce", &Generator::allreduceAtomic},
       {"allreduce", &Generator::allreduceRewrite},
       {"allreduce", &Generator::allreduceRestage}},
      {{"allgather", &Generator::allgatherDirect},
       {"allgather", &Generator::allgatherDirect},
       {"allgather", &Generator::allgatherRing}},
      {{"reducescatter", &Generator::reducescatterDirect},
       {"reducescatter", &Generator::reducescatterDirect},
       {"reducescatter", &Generator::reducescatterRing}},
      {{"broadcast", &Generator::broadcastDirect},
       {"broadcast", &Generator::broadcastChain},
       {"broadcast", &Generator::broadcastScatterGather},
       {"broadcast", &Generator::broadcastRewrite}},
      {{"reduce", &Generator::reduceDirect},
       {"reduce", &Generator::reduceChain},
       {"reduce", &Generator::reduceScatterGather}},
      {{"alltoall", &Generator::alltoallDirect},
       {"alltoall", &Generator::alltoallDirect},
       {"alltoall", &Generator::alltoallPairwise},
       {"alltoall", &Generator::alltoallRewrite}},
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
  return finish(seed);
}

PlantedBug Generator::plantBug(uint64_t seed) {
  struct Family {
    const char* name;
    void (Generator::*make)();
  };
  static const std::vector<Family> families = {
      {"local-waw", &Generator::plantLocalWaw},
      {"local-war", &Generator::allreduceRestage},
      {"in-step-overwrite", &Generator::allreduceRestage},
      {"owner-over-put", &Generator::ownerOverPut},
      {"plus-under-max", &Generator::plantPlus},
      {"int-width", &Generator::plantIntWidth},
  };
  // Every family once in each run of as many seeds.
  const Family& family = families[size_t(seed % families.size())];
  planting_ = family.name;
  d_.kind = "allreduce"; // a template of another kind sets its own
  (this->*family.make)();
  PlantedBug bug;
  bug.spec = finish(seed);
  bug.spec.name += "_planted";
  bug.family = family.name;
  bug.rule = d_.plant.rule;
  bug.underMaxMin = d_.plant.underMaxMin;
  bug.at = where(d_.plant.at);
  if (!d_.plant.marker.empty()) {
    // The first line that holds the marker, where it starts.
    size_t begin = 0;
    for (int line = 1; begin < bug.spec.text.size(); ++line) {
      const size_t end = bug.spec.text.find('\n', begin);
      const size_t at = bug.spec.text.substr(begin, end - begin).find(d_.plant.marker);
      if (at != std::string::npos) {
        bug.at = std::to_string(line) + ":" + std::to_string(at + 1);
        break;
      }
      begin = end + 1;
    }
  }
  return bug;
}

} // namespace detail

GeneratedSpec generateSpec(uint64_t seed) {
  return detail::Generator(seed).run(seed);
}

std::vector<std::string> featuredShapes() {
  return {"allreduce rewrite ",
          "allreduce restage ",
          "alltoall rewrite ",
          "broadcast rewrite ",
          " plus",
          " large-constant"};
}

std::vector<uint64_t> seedsCovering(uint64_t seeds, const std::vector<std::string>& parts,
                                    uint64_t limit) {
  std::vector<uint64_t> chosen;
  std::string shapes;
  for (uint64_t seed = 0; seed < seeds; ++seed) {
    chosen.push_back(seed);
    shapes += generateSpec(seed).shape + "\n";
  }
  for (const std::string& part : parts)
    for (uint64_t seed = seeds; shapes.find(part) == std::string::npos && seed < limit; ++seed) {
      const std::string shape = generateSpec(seed).shape;
      if (shape.find(part) != std::string::npos) {
        chosen.push_back(seed);
        shapes += shape + "\n";
      }
    }
  return chosen;
}

PlantedBug generatePlantedBug(uint64_t seed) {
  // Another stream than generateSpec's for the same seed.
  return detail::Generator(seed ^ 0x9e3779b97f4a7c15ull).plantBug(seed);
}

} // namespace collc::differential
