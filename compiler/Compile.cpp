#include "compiler/Compile.h"

#include "abi/CollectiveShapes.h"
#include "abi/collc_abi.h"
#include "compiler/CudaCodeGen.h"
#include "compiler/ElementCounts.h"
#include "compiler/FormatSource.h"
#include "compiler/Lower.h"
#include "compiler/ProofMemo.h"
#include "compiler/RowEpilogue.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "compiler/ir/Visitor.h"
#include "compiler/verify/Simulation.h"
#include "dsl/Parser.h"

#include <algorithm>
#include <chrono>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_os_ostream.h>
#include <map>
#include <set>
#include <sstream>

namespace collc {

namespace embedded {
const std::vector<std::pair<std::string_view, std::string_view>>& stdlibSpecs();
}

namespace {

/// The error of a spec whose diagnostics were printed: how many, and where.
Error specError(const Diagnostics& diags, const SpecSource& spec) {
  const unsigned errors = std::max(1u, diags.errorCount());
  return Error::specFailure(std::to_string(errors) + (errors == 1 ? " error" : " errors") + " in " +
                            spec.bufferName);
}

} // namespace

std::vector<std::string> stdlibNames() {
  std::vector<std::string> names;
  for (const auto& [file, text] : embedded::stdlibSpecs())
    names.push_back(std::string(llvm::sys::path::stem(file)));
  std::sort(names.begin(), names.end());
  return names;
}

Expected<SpecSource> loadSpec(std::string_view nameOrPath) {
  const std::string path(nameOrPath);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (file)
    return SpecSource{path, (*file)->getBuffer().str()};
  std::string stem = llvm::sys::path::stem(path).str();
  bool looksLikeName = path.find('/') == std::string::npos;
  if (looksLikeName) {
    for (const auto& [fileName, text] : embedded::stdlibSpecs())
      if (llvm::sys::path::stem(fileName) == stem)
        return SpecSource{"stdlib/" + std::string(fileName), std::string(text)};
  }
  return makeError("cannot open spec '" + path + "': " + file.getError().message() +
                   (looksLikeName
                        ? ", and the standard library has no spec of that name (see 'collc list')"
                        : ""));
}

namespace {

int64_t workLimitOf(const CompileOptions& options) {
  return options.verifyWorkLimit > 0 ? options.verifyWorkLimit : kDefaultVerifyWorkLimit;
}

/// Front end and verifier, shared by checkSpec and compileCollective.
struct Checked {
  std::unique_ptr<ir::Program> program; // every variant is lowered from a copy of it

  VerifyResult proof;
};

/// `onlyRanks`: as verify's (0: every declared rank count, what `collc check` proves; a variant's
/// rank count: what compiling that variant needs).
Checked parseAndVerify(Diagnostics& diags, const SpecSource& spec, std::ostream* printAst,
                       int64_t workLimit, int onlyRanks) {
  Checked result;
  auto ast = parseSpecText(diags, spec.text, spec.bufferName);
  if (!ast)
    return result;
  if (printAst) {
    llvm::raw_os_ostream out(*printAst);
    ast::print(*ast, out);
  }
  auto program = analyze(*ast, diags);
  if (!program)
    return result;
  // Keyed by the limit too: a smaller one may leave an alias unproved that a larger one proves.
  // And by the rank counts proved: a proof of one count has that count's facts, so a variant's
  // lowering never depends on which proofs this process made before.
  const std::string memoKey =
      std::to_string(workLimit) + "\n" + std::to_string(onlyRanks) + "\n" + spec.text;
  if (auto proof = rememberedSpecProof(memoKey)) {
    result.proof = *proof;
  } else {
    result.proof = verify(*program, diags, workLimit, onlyRanks);
    rememberSpecProof(memoKey, result.proof);
  }
  if (result.proof.ok)
    result.program = std::move(program);
  return result;
}

/// The rank counts a compile of `options` proves the spec for (as verify's `onlyRanks`): the
/// variant's own. A variant for max or min proves every declared count: a spec whose result is
/// right for sum only at any of them is refused for the other operators (Verifier.h, sumOnly).
int proofRanksOf(const CompileOptions& options) {
  return options.op == ReduceOp::Sum ? options.nranks : 0;
}

/// Rejects launch overrides the spec itself could not have set (same rules as Sema's knobs).
void checkLaunchShape(const LaunchShape& shape, Diagnostics& diags, llvm::SMLoc loc) {
  auto require = [&](bool ok, const std::string& message) {
    if (!ok)
      diags.error(loc, message);
  };
  require(shape.blocks >= 1 && shape.blocks <= COLLC_MAX_BLOCKS,
          "blocks = " + std::to_string(shape.blocks) + " is invalid: must be 1.." +
              std::to_string(COLLC_MAX_BLOCKS));
  require(shape.threads >= 32 && shape.threads <= 1024 && shape.threads % 32 == 0,
          "threads = " + std::to_string(shape.threads) +
              " is invalid: must be a multiple of 32 in 32..1024");
  require(shape.vectorBytes == 2 || shape.vectorBytes == 4 || shape.vectorBytes == 8 ||
              shape.vectorBytes == 16,
          "vector = " + std::to_string(shape.vectorBytes) + " is invalid: must be 2, 4, 8 or 16");
  require(shape.unroll >= 1 && shape.unroll <= 8,
          "unroll = " + std::to_string(shape.unroll) + " is invalid: must be 1..8");
  require(shape.wholeStores == 0 || shape.wholeStores == 1,
          "whole_stores = " + std::to_string(shape.wholeStores) + " is invalid: must be 0 or 1");
}

class AtomicsNeedSum : public ir::Visitor {
public:
  AtomicsNeedSum(ReduceOp op, Diagnostics& diags) : op_(op), diags_(diags) {}

private:
  void visitAtomicAdd(const ir::AtomicAdd& s) override {
    if (op_ != ReduceOp::Sum)
      diags_.error(s.loc, "atomic_add accumulates with '+', so this spec cannot be compiled "
                          "with op '" +
                              std::string(name(op_)) + "'");
  }
  ReduceOp op_;
  Diagnostics& diags_;
};

/// One variant, lowered: the program the printer prints and the choices it was lowered for.
struct Lowered {
  LoweredVariant variant;
  LaunchShape launch;
  int root = 0;
  int64_t rowLength = 0;
};

/// The variant's choices checked against the verified `spec`, then the variant lowered for them
/// (compiler/Lower.cpp): all of compileCollective short of generating code. nullopt on a user
/// error (reported to `diags`).
std::optional<Lowered> lowerVariant(const ir::Program& spec, const VerifyResult& proof,
                                    const CompileOptions& options, Diagnostics& diags,
                                    const ir::LineOf& lineOf, bool proveAliases,
                                    int64_t* work = nullptr, bool verify = true,
                                    proof::SpecRuns* specRuns = nullptr) {
  // The variant's choices, each checked against what the spec allows.
  if (options.nranks < spec.minRanks || options.nranks > spec.maxRanks)
    diags.error(spec.loc, "cannot compile for " + std::to_string(options.nranks) +
                              " ranks: the spec declares ranks " + std::to_string(spec.minRanks) +
                              ".." + std::to_string(spec.maxRanks));
  if (hasRoot(spec.kind) && (options.root < 0 || options.root >= options.nranks))
    diags.error(spec.loc, "root " + std::to_string(options.root) + " is not a rank of a " +
                              std::to_string(options.nranks) + "-rank " +
                              std::string(name(spec.kind)) + "; it must be 0.." +
                              std::to_string(options.nranks - 1));
  ir::Program program = spec;
  program.sync = options.sync.value_or(spec.defaultSync);
  if (options.sync)
    program.syncLoc = llvm::SMLoc(); // chosen on the command line: report at the collective
  AtomicsNeedSum atomics(options.op, diags);
  for (const auto& step : program.steps)
    atomics.visitAll(step.body);
  if (options.op != ReduceOp::Sum && proof.sumOnlyOffset >= 0 && !diags.hasErrors())
    diags.error(llvm::SMLoc::getFromPointer(spec.loc.getPointer() + proof.sumOnlyOffset),
                "this spec computes its result for op 'sum' only, so it cannot be compiled with "
                "op '" +
                    std::string(name(options.op)) + "': " + proof.sumOnlyWhy);
  LaunchShape launch;
  launch.blocks = options.blocks.value_or(spec.launch.blocks);
  launch.threads = options.threads.value_or(spec.launch.threads);
  launch.vectorBytes = options.vectorBytes.value_or(spec.launch.vectorBytes);
  launch.unroll = options.unroll.value_or(spec.launch.unroll);
  launch.wholeStores = options.wholeStores.value_or(spec.launch.wholeStores);
  checkLaunchShape(launch, diags, spec.loc);
  // A vector narrower than one element means one element per operation.
  launch.vectorBytes = std::max<int>(launch.vectorBytes, sizeOf(options.dtype));
  if (diags.hasErrors())
    return std::nullopt;

  LowerOptions lowerOptions;
  lowerOptions.dtype = options.dtype;
  lowerOptions.op = options.op;
  lowerOptions.vectorBytes = launch.vectorBytes;
  lowerOptions.unroll = launch.unroll;
  lowerOptions.threads = launch.threads;
  lowerOptions.nranks = options.nranks;
  lowerOptions.rowLength = options.rowLength ? options.rowLength : spec.defaultRowLength;
  lowerOptions.experimentalLL128 = options.experimentalLL128;
  lowerOptions.breakRotationForTests = options.breakRotationForTests;
  lowerOptions.verifyWorkLimit = workLimitOf(options);
  lowerOptions.verifyLowered = verify;
  lowerOptions.proveAliases = proveAliases;
  lowerOptions.specRuns = specRuns;
  lowerOptions.lineOf = lineOf;
  std::optional<llvm::raw_os_ostream> printIr;
  if (options.printIr && options.printIrAfterAll)
    lowerOptions.printAfterEach = &printIr.emplace(*options.printIr);
  // The facts of the variant's own rank count: it lowers the same after `collc check`'s proof of
  // every count as after a compile's proof of its own.
  auto lowered = lower(program, proofForRanks(proof, options.nranks), lowerOptions, diags, work);
  if (!lowered)
    return std::nullopt;
  return Lowered{std::move(*lowered), launch, hasRoot(spec.kind) ? options.root : 0,
                 lowerOptions.rowLength};
}

/// "line:col: message" of the first error in diagnostics as Diagnostics prints them.
std::string firstErrorOf(const std::string& text) {
  const std::string line = text.substr(0, text.find('\n'));
  const size_t error = line.find(": error: ");
  if (error == std::string::npos)
    return line;
  const std::string place = line.substr(0, error);
  const size_t column = place.rfind(':');
  const size_t row = column == std::string::npos ? std::string::npos : place.rfind(':', column - 1);
  std::string message = line.substr(error + 9);
  // "sync strategy 'll' cannot synchronize 'c': ..." -- the report names the strategy itself.
  const std::string lead = "cannot synchronize '";
  const size_t named = message.find(lead);
  if (message.rfind("sync strategy '", 0) == 0 && named != std::string::npos) {
    const size_t colon = message.find("': ", named + lead.size());
    if (colon != std::string::npos)
      message = message.substr(colon + 3);
  }
  return (row == std::string::npos ? place : place.substr(row + 1)) + ": " + message;
}

ir::LineOf lineOfIn(const llvm::SourceMgr& sources) {
  return [&sources](llvm::SMLoc loc) {
    return loc.isValid() ? sources.getLineAndColumn(loc).first : 0u;
  };
}

} // namespace

Expected<std::pair<int, int>> declaredRanks(const SpecSource& spec) {
  llvm::SourceMgr sources;
  std::ostringstream diagnostics;
  llvm::raw_os_ostream diagnosticStream(diagnostics);
  Diagnostics diags(sources, diagnosticStream);
  auto ast = parseSpecText(diags, spec.text, spec.bufferName);
  auto program = ast ? analyze(*ast, diags) : nullptr;
  if (!program) {
    diagnosticStream.flush();
    return makeError(diagnostics.str());
  }
  return std::pair{program->minRanks, program->maxRanks};
}

Expected<std::pair<int, int>> declaredRanks(std::string_view nameOrPath) {
  Expected<SpecSource> spec = loadSpec(nameOrPath);
  if (!spec)
    return spec.takeError();
  return declaredRanks(*spec);
}

namespace {
/// Why the report names a strategy not tried (StrategyReport::notTriedFrom).
constexpr const char* kReportBudgetSpent =
    "check's budget of work for the other strategies is spent";
} // namespace

Error checkSpec(const SpecSource& spec, std::ostream& diagnostics, CheckReport* report,
                CheckDepth depth, int64_t workLimit) {
  const bool everyStrategy = report && depth == CheckDepth::EveryStrategy;
  const int64_t limit = workLimit > 0 ? workLimit : kDefaultVerifyWorkLimit;
  llvm::SourceMgr sources;
  llvm::raw_os_ostream diagnosticStream(diagnostics);
  Diagnostics diags(sources, diagnosticStream);
  const auto start = std::chrono::steady_clock::now();
  Checked checked = parseAndVerify(diags, spec, nullptr, limit, /*onlyRanks=*/0);
  if (!checked.program)
    return specError(diags, spec);
  const ir::Program& verified = *checked.program;
  if (report) {
    report->work = checked.proof.work;
    report->workLimit = limit;
    report->minRanks = verified.minRanks;
    report->maxRanks = verified.maxRanks;
    report->runs = checked.proof.runs;
    report->seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (checked.proof.sumOnlyOffset >= 0) {
      const auto [line, column] = sources.getLineAndColumn(
          llvm::SMLoc::getFromPointer(verified.loc.getPointer() + checked.proof.sumOnlyOffset));
      report->sumOnly =
          std::to_string(line) + ":" + std::to_string(column) + ": " + checked.proof.sumOnlyWhy;
    }
    report->inPlace = checked.proof.inPlace;
    if (!checked.proof.inPlaceWhy.empty())
      report->inPlaceWhy = firstErrorOf(checked.proof.inPlaceWhy);
    report->auxAliases = checked.proof.auxAliases;
    report->aliasesTogether = checked.proof.aliasesTogether;
  }
  // The spec's own sync strategy and launch shape must also lower for every rank count and
  // element type, or emit, run and bench would refuse a spec that check called ok (a packet holds
  // 2 elements of f32 and 4 of a 16-bit type); every other strategy is tried too, quietly, for the
  // report, with f32. A spec with rows and no default row length is lowered with rows of 4096 (a
  // multiple of every vector width) for this.
  // Work: the spec's proof had its own budget; the own strategy's lowered programs at every rank
  // count and type share one more, and the other strategies (a report, not a verdict) one more
  // again, so that check is bounded whatever the spec.
  int64_t ownBudget = limit, othersBudget = limit;
  // Where a lowered program reads to its proof as one proved at its rank count (loweredProofText:
  // bf16 as f16, and f16 as f32 where no buffer holds LL packets), that proof is its proof.
  std::map<int, std::set<std::string>> provedPrograms; // by nranks: their loweredProofText
  // Every lowered program is compared with the spec's runs: each is made once for all of them.
  proof::SpecRuns specRuns;
  for (const RegisteredSync& registeredSync : kSyncRegistry) {
    const SyncKind sync = registeredSync.value;
    if (registeredSync.experimental && sync != verified.defaultSync)
      continue; // refused unless asked for, so not tried for the report
    const bool own = sync == verified.defaultSync;
    if (!own && !everyStrategy)
      continue;
    int64_t& budget = own ? ownBudget : othersBudget;
    StrategyReport strategy{sync, "", {}, true};
    for (DType dtype : kCheckedTypes) {
      if (!own && dtype != DType::F32)
        break; // the report's strategies: f32
      // The report's aliases are those of the f32 programs.
      const bool reportAliases = everyStrategy && dtype == DType::F32;
      for (int nranks = verified.minRanks; nranks <= verified.maxRanks; ++nranks) {
        if (budget <= 0) {
          if (own) {
            diags.error(verified.loc, "checking the programs sync strategy '" +
                                          std::string(name(sync)) + "' lowers '" + verified.name +
                                          "' to takes more than " + std::to_string(limit) +
                                          " steps of work; collc refuses a spec it cannot prove in "
                                          "that: use fewer statements, loop trips or rank counts");
            return specError(diags, spec);
          }
          strategy.refused = kReportBudgetSpent;
          strategy.notTriedFrom = nranks;
          strategy.aliases.clear();
          break;
        }
        CompileOptions options;
        options.nranks = nranks;
        options.dtype = dtype;
        options.verifyWorkLimit = budget;
        if (!own)
          options.sync = sync; // unset: the spec's own, reported at its `sync` clause
        if (!verified.rowLengthName.empty() && verified.defaultRowLength == 0)
          options.rowLength = 4096;
        std::string text;
        llvm::raw_string_ostream out(text);
        Diagnostics quiet(sources, out);
        Diagnostics& variantDiags = own ? diags : quiet;
        int64_t work = 0;
        // Lowered unproved first where a twin may have been proved, then proved if none was.
        const bool maybeTwin = own && !reportAliases && provedPrograms.count(nranks);
        auto lowered =
            lowerVariant(verified, checked.proof, options, variantDiags, lineOfIn(sources),
                         reportAliases, &work, /*verify=*/!maybeTwin, &specRuns);
        bool proved = !maybeTwin;
        if (lowered && maybeTwin &&
            !provedPrograms[nranks].count(
                loweredProofText(lowered->variant.program, dtype, lineOfIn(sources)))) {
          lowered = lowerVariant(verified, checked.proof, options, variantDiags, lineOfIn(sources),
                                 reportAliases, &work, /*verify=*/true, &specRuns);
          proved = true;
        }
        if (lowered && own && proved)
          provedPrograms[nranks].insert(
              loweredProofText(lowered->variant.program, dtype, lineOfIn(sources)));
        budget -= work;
        if (report)
          report->loweredWork += work;
        if (!lowered && own) {
          diags.note(verified.loc, "in the variant for " + std::string(name(dtype)) + ", " +
                                       std::to_string(nranks) + " ranks, sync " +
                                       std::string(name(sync)) +
                                       " (collc check lowers every element type and rank count)");
          return specError(diags, spec);
        }
        if (!lowered) {
          // A proof the report's budget cut short (its message names the budget) is no refusal.
          const bool cut =
              out.str().find("takes more than " + std::to_string(options.verifyWorkLimit) +
                             " steps of work") != std::string::npos;
          strategy.refused =
              cut ? kReportBudgetSpent
                  : "nranks=" + std::to_string(nranks) + ": " + firstErrorOf(out.str());
          strategy.notTriedFrom = cut ? nranks : 0;
          strategy.aliases.clear();
          break;
        }
        if (!reportAliases)
          continue;
        strategy.aliasesTogether &= lowered->variant.aliases.together;
        for (size_t k = 0; k < lowered->variant.aliases.pairs.size(); ++k) {
          const AliasVerdict& verdict = lowered->variant.aliases.pairs[k];
          if (strategy.aliases.size() <= k)
            strategy.aliases.push_back(
                AliasReport{verdict.written, verdict.read, verdict.inPlace, {}, ""});
          AliasReport& alias = strategy.aliases[k];
          // A proof the budget cut short (its message names the budget) is no verdict.
          const bool cut = verdict.why.find(" runs so far); collc refuses a spec it cannot "
                                            "prove in that") != std::string::npos;
          if (verdict.allowed)
            alias.allowedRanks.push_back(nranks);
          else if (cut && alias.notProvedFrom == 0)
            alias.notProvedFrom = nranks;
          else if (!cut && alias.why.empty())
            alias.why = "nranks=" + std::to_string(nranks) + ": " + firstErrorOf(verdict.why);
        }
      }
    }
    if (everyStrategy)
      report->strategies.push_back(std::move(strategy));
  }
  if (report) {
    report->types.assign(std::begin(kCheckedTypes), std::end(kCheckedTypes));
    report->totalSeconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return Error::success();
}

Expected<VariantPrograms> lowerVariantPrograms(const SpecSource& spec,
                                               const CompileOptions& options,
                                               std::ostream& diagnostics, bool proveAliases) {
  llvm::SourceMgr sources;
  llvm::raw_os_ostream diagnosticStream(diagnostics);
  Diagnostics diags(sources, diagnosticStream);
  auto fail = [&]() { return specError(diags, spec); };
  Checked checked =
      parseAndVerify(diags, spec, nullptr, workLimitOf(options), proofRanksOf(options));
  if (!checked.program)
    return fail();
  auto lowered = lowerVariant(*checked.program, checked.proof, options, diags, lineOfIn(sources),
                              proveAliases);
  if (!lowered)
    return fail();
  LoweredVariant& variant = lowered->variant;
  VariantPrograms programs;
  programs.aliasesProved = proveAliases;
  programs.aliasesTogether = proveAliases && variant.aliases.together;
  for (const AliasVerdict& verdict : variant.aliases.pairs) {
    if (!verdict.allowed)
      continue;
    if (verdict.inPlace) {
      programs.inPlace = true;
      continue;
    }
    auto index = [&](const std::string& name) {
      const ir::BufferId id = variant.program.find(name);
      if (id < 0 || variant.program.buffer(id).role != ir::BufferRole::Aux)
        internalError("an aliased buffer that is not an aux buffer: " + name);
      return variant.program.buffer(id).auxIndex;
    };
    programs.auxAliases.push_back({index(verdict.written), index(verdict.read)});
  }
  programs.spec = std::make_shared<const ir::Program>(std::move(variant.spec));
  programs.lowered = std::make_shared<const ir::Program>(std::move(variant.program));
  return programs;
}

Expected<CompiledCollective> compileCollective(const SpecSource& spec,
                                               const CompileOptions& options,
                                               std::ostream& diagnostics) {
  llvm::SourceMgr sources;
  llvm::raw_os_ostream diagnosticStream(diagnostics);
  Diagnostics diags(sources, diagnosticStream);
  auto fail = [&]() { return specError(diags, spec); };
  Checked checked =
      parseAndVerify(diags, spec, options.printAst, workLimitOf(options), proofRanksOf(options));
  if (!checked.program)
    return fail();
  auto lowered = lowerVariant(*checked.program, checked.proof, options, diags, lineOfIn(sources),
                              /*proveAliases=*/true);
  if (!lowered)
    return fail();
  const ir::Program& program = lowered->variant.program;
  if (options.specProgram)
    *options.specProgram = std::make_shared<const ir::Program>(lowered->variant.spec);
  const LaunchShape launch = lowered->launch;
  const int root = lowered->root;
  const int64_t rowLength = lowered->rowLength;
  if (options.printIr && !options.printIrAfterAll) {
    llvm::raw_os_ostream out(*options.printIr);
    ir::print(program, out, lineOfIn(sources));
  }

  CodeGenTarget target;
  target.dtype = options.dtype;
  target.op = options.op;
  target.nranks = options.nranks;
  target.root = root;
  target.rowLength = rowLength;
  target.eps = options.eps;
  target.launch = launch;
  target.watchdog = options.watchdog;
  target.programmaticLaunch = options.programmaticLaunch;
  target.rankLaunchEntry = options.rankLaunchEntry;
  target.specFile = spec.bufferName;
  target.lineOf = lineOfIn(sources);

  CompiledCollective compiled;
  compiled.specName = program.name;
  compiled.kernelName = kernelName(program);
  compiled.cudaSource = generateCuda(program, target);
  if (options.formatSource)
    compiled.cudaSource = formatCudaSource(compiled.cudaSource);
  compiled.kind = program.kind;
  compiled.dtype = options.dtype;
  compiled.op = options.op;
  compiled.sync = program.sync;
  compiled.nranks = options.nranks;
  compiled.root = root;
  compiled.launch = launch;
  compiled.syncPointsPerCall = program.barriers;
  compiled.scratchCopies = program.scratchCopies;
  compiled.programmaticLaunch = options.programmaticLaunch;
  for (const auto& step : program.steps)
    compiled.stepNames.push_back(step.name);
  compiled.rowLength = rowLength;
  compiled.eps = options.eps;
  compiled.aux = describeAuxBuffers(program, options.nranks, rowLength);
  if (program.output() >= 0)
    compiled.outputFixedType = program.buffer(program.output()).fixedType;
  // What this variant's own lowered program allows, not the spec: its strategy may race where
  // the spec's waits order.
  compiled.aliasesTogether = lowered->variant.aliases.together;
  for (const AliasVerdict& verdict : lowered->variant.aliases.pairs) {
    if (!verdict.allowed)
      continue;
    if (verdict.inPlace) {
      compiled.inPlace = true;
      continue;
    }
    auto index = [&](const std::string& name) {
      for (size_t k = 0; k < compiled.aux.size(); ++k)
        if (compiled.aux[k].name == name)
          return int(k);
      internalError("an aliased buffer that is not an aux buffer: " + name);
    };
    compiled.auxAliases.push_back({index(verdict.written), index(verdict.read)});
  }
  for (ir::BufferId id : program.scratchBuffers())
    compiled.scratch.push_back(
        describeScratch(program.buffer(id), options.nranks, options.dtype, rowLength));
  return compiled;
}

} // namespace collc
