// The compiler's one entry point: a spec (stdlib name, path or text) and the choices of the call
// site in, a CompiledCollective out. Used by the collc tool, the runtime's users and the tests.
// Plain C++17 and collc's own types (Error, Expected): LLVM stays hidden inside
// libcollc_compiler.so, so a caller needs none and may have its own copy.
// Installed as <collc/compiler/Compile.h> (collc/collc.hpp includes it; link collc::compiler).
// The compiler's IR is not installed: the few members that name it (ir::Program, CallRotation)
// serve collc's own tools and tests, and an application leaves them unset.
#ifndef COLLC_COMPILER_COMPILE_H
#define COLLC_COMPILER_COMPILE_H

#include "abi/CompiledCollective.h"
#include "abi/Status.h"

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace collc {

namespace ir {
struct Program;
}
struct CallRotation;

struct CompileOptions {
  DType dtype = DType::F32;
  ReduceOp op = ReduceOp::Sum;
  int nranks = 2;
  /// The root rank of a broadcast or reduce, 0..nranks-1; a constant of the generated kernel (so
  /// part of its source and cache key). Other kinds have none and ignore it.
  int root = 0;
  /// The row length of a spec with `rows NAME` (e.g. the hidden size); a constant of the kernel.
  /// 0: the spec's default (`rows hidden = 4096`), an error if it has none.
  int64_t rowLength = 0;
  float eps = 1e-6f;            // rmsnorm's epsilon, a constant of the kernel
  std::optional<SyncKind> sync; // unset: the spec's default
  std::optional<int> blocks, threads, vectorBytes, unroll; // unset: the spec's launch defaults
  std::optional<int> wholeStores;                          // LaunchShape::wholeStores
  bool formatSource = true;                                // run clang-format over the emitted CUDA
  /// Polls give up after the runtime's timeout and report where they waited. false removes the
  /// bound, only to measure what it costs: a lost peer then hangs the kernel.
  bool watchdog = true;
  /// Programmatic dependent launch (sm_90): the kernel's launch overlaps the previous kernel's
  /// tail on the stream; it waits for that kernel before reading or writing anything.
  bool programmaticLaunch = true;
  /// Also emit <kernel>_ranks, the entry point that runs every rank of a world on one GPU as one
  /// launch (runtime/RankLaunch.h): what a one-GPU world of more than 32 ranks needs. The kernel
  /// itself is emitted exactly as without it.
  bool rankLaunchEntry = false;
  /// Compile the ll128 strategy although it is not trusted yet (dsl/README.md, ll128): for
  /// investigating it on a machine, never for results that matter.
  bool experimentalLL128 = false;
  /// collc's tests only: changes the rotation through scratch copies and flags that the proof
  /// across calls assumes (compiler/verify/AcrossCalls.h), to see it refuse a broken one.
  std::function<void(CallRotation&)> breakRotationForTests;
  /// Work the proof of the spec may take (collc check reports it); 0: kDefaultVerifyWorkLimit
  /// (compiler/Verifier.h). Each variant's lowered program gets as much again.
  int64_t verifyWorkLimit = 0;
  std::ostream* printAst = nullptr; // if set, the parsed tree is printed here
  std::ostream* printIr = nullptr;  // if set, the lowered IR is printed here
  /// With printIr: after every step of the variant's lowering (compiler/Lower.cpp), from the
  /// checked spec on, not only the last.
  bool printIrAfterAll = false;
  /// collc's tools only: if set, receives the spec's program the variant was lowered from (its
  /// steps expanded for nranks), what the run harness interprets as the variant's reference.
  std::shared_ptr<const ir::Program>* specProgram = nullptr;
};

// Errors: where the spec (or an option) is wrong, the diagnostics (file:line:col: error: ...) go to
// the `diagnostics` stream and the returned Error is a spec error (Error::isSpecError) that says
// how many there were ("2 errors in allreduce.coll"). Any other Error is a failure of collc itself.

/// A spec to compile: `text` with `bufferName` for diagnostics (a path or "<stdlib>/name.coll").
struct SpecSource {
  std::string bufferName;
  std::string text;
};

/// Finds a spec by stdlib name (`allreduce_oneshot`) or by path. Errors name what was looked for.
Expected<SpecSource> loadSpec(std::string_view nameOrPath);

/// Stdlib spec names, sorted.
std::vector<std::string> stdlibNames();

/// The rank counts a spec declares (`ranks MIN..MAX`), from its front end alone: no proof runs.
/// An error carries the spec's diagnostics.
Expected<std::pair<int, int>> declaredRanks(const SpecSource& spec);
/// The same of a spec found by stdlib name or path (loadSpec).
Expected<std::pair<int, int>> declaredRanks(std::string_view nameOrPath);

/// Whether one pair of buffers may be one memory in the variants of one strategy.
struct AliasReport {
  std::string written, read;
  bool inPlace = false;          // the pair is the output and the input
  std::vector<int> allowedRanks; // the rank counts whose variants allow it
  std::string why; // where not: "nranks=R: line:col: the rule it breaks" of the first such count
  /// The first rank count whose proof of the pair check's budget of work cut short (0: none): no
  /// verdict there, and none tried past it.
  int notProvedFrom = 0;
};

/// What one strategy makes of the spec at every rank count the spec declares.
struct StrategyReport {
  SyncKind sync = SyncKind::Barrier;
  /// Empty when it lowers for every rank count; else "nranks=R: line:col: why" of the first
  /// rank count it refuses, or, where check's budget for the report ran out first, why it was not
  /// tried (notTriedFrom).
  std::string refused;
  /// Every pair the spec's own proof allows (in place first), per rank count.
  std::vector<AliasReport> aliases;
  /// At every rank count, the pairs allowed there also hold all at once.
  bool aliasesTogether = true;
  /// Nonzero where check's budget for the report ran out: the first rank count not tried (the
  /// counts before it lower). No verdict on it or past it.
  int notTriedFrom = 0;
};

/// What `collc check` says of a spec it accepts.
struct CheckReport {
  int minRanks = 2, maxRanks = 8;
  int64_t runs = 0; // configurations the proof ran (rank count, root, count or residue)
  int64_t work = 0, workLimit = 0; // the proof's work (segment operations) and its limit
  int64_t loweredWork = 0;         // the proofs of the lowered programs and their aliases
  double totalSeconds = 0;         // the whole check
  double seconds = 0;              // the proof's time
  /// Empty when the spec's result holds for every operator; else "line:col: why" of the first
  /// statement that makes it hold for 'sum' only (other operators are refused).
  std::string sumOnly;
  bool inPlace = false;   // the spec allows the output to be the input's memory
  std::string inPlaceWhy; // where it does not (for an input and output of one shape): line:col: why
  /// Aux buffers the spec allows to be the same memory: (written, read) names.
  std::vector<std::pair<std::string, std::string>> auxAliases;
  bool aliasesTogether = true; // the pairs above also hold all at once
  /// With CheckDepth::EveryStrategy, every strategy collc compiles (ll128 aside while it is
  /// refused), f32 and sum: whether it lowers, and which of the pairs above its lowered programs
  /// allow. A compiled variant allows exactly what its own lowered program does
  /// (CompiledCollective::inPlace, auxAliases).
  std::vector<StrategyReport> strategies;
  /// The element types the spec's own strategy was lowered and checked for (kCheckedTypes).
  std::vector<DType> types;
};

/// How much checkSpec does past the spec's proof and its own strategy's lowered programs.
enum class CheckDepth {
  OwnStrategy,   // what decides whether the spec is accepted
  EveryStrategy, // and, for the report, every other strategy and every pair of aliased buffers
};

/// The element types `checkSpec` lowers the spec for: every one collc compiles.
inline constexpr auto kCheckedTypes = kAllDTypes;

/// Parses, checks and verifies the spec for every rank count it declares, then lowers it with its
/// own sync strategy and launch shape for each of them and every element type (so that a strategy
/// the spec names but cannot use is refused here, at its `sync` clause), checking each lowered
/// program; returns no code. `report`, if given, receives what the proof found
/// (CheckReport::strategies only with CheckDepth::EveryStrategy). `workLimit` (0:
/// kDefaultVerifyWorkLimit) bounds the spec's proof, and as much again each the own strategy's
/// lowered programs and the other strategies' for the report.
Error checkSpec(const SpecSource& spec, std::ostream& diagnostics, CheckReport* report = nullptr,
                CheckDepth depth = CheckDepth::OwnStrategy, int64_t workLimit = 0);

/// Parses, checks and verifies the spec for the variant's rank count (every root and n; it must be
/// one the spec declares), then lowers it for the variant, proving the lowered program for one call
/// and across calls. `checkSpec` is what proves every declared rank count.
Expected<CompiledCollective>
compileCollective(const SpecSource& spec, const CompileOptions& options, std::ostream& diagnostics);

/// collc's tools and tests only (the IR is not installed).
/// One variant's two programs, for the interpreter (compiler/interpret/): the verified spec and
/// what the variant lowers it to, the steps of both expanded for options.nranks. Their source
/// locations point into text that is gone: only their data flow is for use.
struct VariantPrograms {
  std::shared_ptr<const ir::Program> spec;
  std::shared_ptr<const ir::Program> lowered;
  /// With proveAliases: the buffers the lowered program allows as one memory, as
  /// CompiledCollective::inPlace, auxAliases (Buffer::auxIndex pairs) and aliasesTogether say.
  bool aliasesProved = false;
  bool inPlace = false;
  std::vector<std::pair<int, int>> auxAliases;
  bool aliasesTogether = false;
};

/// compileCollective up to the lowered program (verified too), without generating code; with
/// proveAliases, also the proofs of the pairs of buffers it allows as one memory.
Expected<VariantPrograms> lowerVariantPrograms(const SpecSource& spec,
                                               const CompileOptions& options,
                                               std::ostream& diagnostics,
                                               bool proveAliases = false);

} // namespace collc

#endif // COLLC_COMPILER_COMPILE_H
