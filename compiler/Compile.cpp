#include "compiler/Compile.h"

#include "abi/CollectiveShapes.h"
#include "abi/collc_abi.h"
#include "compiler/CudaCodeGen.h"
#include "compiler/ElementCounts.h"
#include "compiler/ExpandSteps.h"
#include "compiler/FormatSource.h"
#include "compiler/Lower.h"
#include "compiler/RowEpilogue.h"
#include "compiler/Sema.h"
#include "compiler/Verifier.h"
#include "dsl/Parser.h"

#include <algorithm>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

namespace collc {

namespace embedded {
const std::vector<std::pair<std::string_view, std::string_view>>& stdlibSpecs();
}

char SpecError::ID = 0;

void SpecError::log(llvm::raw_ostream& out) const {
  out << errors_ << (errors_ == 1 ? " error" : " errors") << " in " << file_;
}

std::vector<std::string> stdlibNames() {
  std::vector<std::string> names;
  for (const auto& [file, text] : embedded::stdlibSpecs())
    names.push_back(std::string(llvm::sys::path::stem(file)));
  std::sort(names.begin(), names.end());
  return names;
}

llvm::Expected<SpecSource> loadSpec(const std::string& nameOrPath) {
  auto file = llvm::MemoryBuffer::getFile(nameOrPath, /*IsText=*/true);
  if (file)
    return SpecSource{nameOrPath, (*file)->getBuffer().str()};
  std::string stem = llvm::sys::path::stem(nameOrPath).str();
  bool looksLikeName = nameOrPath.find('/') == std::string::npos;
  if (looksLikeName) {
    for (const auto& [fileName, text] : embedded::stdlibSpecs())
      if (llvm::sys::path::stem(fileName) == stem)
        return SpecSource{"stdlib/" + std::string(fileName), std::string(text)};
  }
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(), "cannot open spec '%s': %s%s", nameOrPath.c_str(),
      file.getError().message().c_str(),
      looksLikeName ? ", and the standard library has no spec of that name (see 'collc list')"
                    : "");
}

namespace {

/// Front end and verifier, shared by checkSpec and compileCollective.
struct Checked {
  std::unique_ptr<ast::Spec> ast; // lowering changes a program: a fresh one per variant comes
                                  // from here (analyze), with the same proof
  std::unique_ptr<ir::Program> program;
  VerifyResult proof;
};

Checked parseAndVerify(Diagnostics& diags, const SpecSource& spec, llvm::raw_ostream* printAst) {
  Checked result;
  auto ast = parseSpecText(diags, spec.text, spec.bufferName);
  if (!ast)
    return result;
  if (printAst)
    ast::print(*ast, *printAst);
  auto program = analyze(*ast, diags);
  if (!program)
    return result;
  result.proof = verify(*program, diags);
  if (result.proof.ok) {
    result.program = std::move(program);
    result.ast = std::move(ast);
  }
  return result;
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

void checkAtomics(const std::vector<ir::StmtPtr>& body, ReduceOp op, Diagnostics& diags) {
  for (const auto& stmt : body) {
    if (stmt->kind == ir::StmtKind::Loop)
      checkAtomics(stmt->body, op, diags);
    else if (stmt->kind == ir::StmtKind::AtomicAdd && op != ReduceOp::Sum)
      diags.error(stmt->loc, "atomic_add accumulates with '+', so this spec cannot be compiled "
                             "with op '" +
                                 std::string(name(op)) + "'");
  }
}

/// What lowering settled for one variant.
struct Lowered {
  SyncKind sync = SyncKind::Barrier;
  LaunchShape launch;
  int root = 0;
  int64_t rowLength = 0;
};

/// The variant's choices checked against the verified `program`, then its steps expanded and
/// lowered for them: all of compileCollective short of generating code. False on a user error
/// (reported to `diags`).
bool lowerVariant(ir::Program& program, const VerifyResult& proof, const CompileOptions& options,
                  Diagnostics& diags, Lowered& lowered) {
  // The variant's choices, each checked against what the spec allows.
  if (options.nranks < program.minRanks || options.nranks > program.maxRanks)
    diags.error(program.loc, "cannot compile for " + std::to_string(options.nranks) +
                                 " ranks: the spec declares ranks " +
                                 std::to_string(program.minRanks) + ".." +
                                 std::to_string(program.maxRanks));
  if (hasRoot(program.kind) && (options.root < 0 || options.root >= options.nranks))
    diags.error(program.loc, "root " + std::to_string(options.root) + " is not a rank of a " +
                                 std::to_string(options.nranks) + "-rank " +
                                 std::string(name(program.kind)) + "; it must be 0.." +
                                 std::to_string(options.nranks - 1));
  const SyncKind sync = options.sync.value_or(program.defaultSync);
  program.sync = sync;
  if (options.sync)
    program.syncLoc = llvm::SMLoc(); // chosen on the command line: report at the collective
  for (const auto& step : program.steps)
    checkAtomics(step.body, options.op, diags);
  LaunchShape launch;
  launch.blocks = options.blocks.value_or(program.blocks);
  launch.threads = options.threads.value_or(program.threads);
  launch.vectorBytes = options.vectorBytes.value_or(program.vectorBytes);
  launch.unroll = options.unroll.value_or(program.unroll);
  launch.wholeStores = options.wholeStores.value_or(program.wholeStores);
  checkLaunchShape(launch, diags, program.loc);
  // A vector narrower than one element means one element per operation.
  launch.vectorBytes = std::max<int>(launch.vectorBytes, sizeOf(options.dtype));
  if (diags.hasErrors())
    return false;
  auto steps = expandRepeatedSteps(program, options.nranks, diags);
  if (!steps)
    return false;
  program.steps = std::move(*steps);
  const int root = hasRoot(program.kind) ? options.root : 0;

  LowerOptions lowerOptions;
  lowerOptions.dtype = options.dtype;
  lowerOptions.op = options.op;
  lowerOptions.vectorBytes = launch.vectorBytes;
  lowerOptions.unroll = launch.unroll;
  lowerOptions.experimentalLL128 = options.experimentalLL128;
  if (options.printIr && options.printIrAfterAll)
    lowerOptions.printAfterEach = options.printIr;
  const int64_t rowLength = options.rowLength ? options.rowLength : program.defaultRowLength;
  if (!lower(program, proof, lowerOptions, diags) || !checkRowLength(program, rowLength, diags))
    return false;
  // Unroll multiplies the vectors of an element loop; LL128's line loops and row steps have
  // their own shape, which it would leave as it is.
  const bool rowSteps = std::any_of(program.steps.begin(), program.steps.end(),
                                    [](const ir::Step& step) { return step.byRows; });
  if (launch.unroll > 1 && (program.lineLoops || rowSteps)) {
    diags.error(program.loc,
                "unroll = " + std::to_string(launch.unroll) +
                    " does not apply to this variant: its loops " +
                    (program.lineLoops ? "walk 128-byte lines (ll128)" : "go by rows") +
                    ", one line or row at a time; use unroll = 1");
    return false;
  }
  lowered.sync = sync;
  lowered.launch = launch;
  lowered.root = root;
  lowered.rowLength = rowLength;
  return true;
}

} // namespace

llvm::Error checkSpec(const SpecSource& spec, llvm::raw_ostream& diagnostics) {
  llvm::SourceMgr sources;
  Diagnostics diags(sources, diagnostics);
  Checked checked = parseAndVerify(diags, spec, nullptr);
  if (!checked.program)
    return llvm::make_error<SpecError>(std::max(1u, diags.errorCount()), spec.bufferName);
  // The spec's own sync strategy and launch shape must also lower for every rank count, or emit,
  // run and bench would refuse a spec that check called ok. The proof holds for every rank
  // count; lowering changes the program, so each count gets a fresh one from the AST. A spec
  // with rows and no default row length is lowered with rows of 4096 (a multiple of every
  // vector width) for this.
  const ir::Program& verified = *checked.program;
  for (int nranks = verified.minRanks; nranks <= verified.maxRanks; ++nranks) {
    CompileOptions options;
    options.nranks = nranks;
    if (!verified.rowLengthName.empty() && verified.defaultRowLength == 0)
      options.rowLength = 4096;
    auto program = analyze(*checked.ast, diags);
    Lowered lowered;
    if (!program || !lowerVariant(*program, checked.proof, options, diags, lowered))
      return llvm::make_error<SpecError>(std::max(1u, diags.errorCount()), spec.bufferName);
  }
  return llvm::Error::success();
}

llvm::Expected<CompiledCollective> compileCollective(const SpecSource& spec,
                                                     const CompileOptions& options,
                                                     llvm::raw_ostream& diagnostics) {
  llvm::SourceMgr sources;
  Diagnostics diags(sources, diagnostics);
  auto fail = [&]() -> llvm::Error {
    return llvm::make_error<SpecError>(std::max(1u, diags.errorCount()), spec.bufferName);
  };
  Checked checked = parseAndVerify(diags, spec, options.printAst);
  if (!checked.program)
    return fail();
  ir::Program& program = *checked.program;

  Lowered lowered;
  if (!lowerVariant(program, checked.proof, options, diags, lowered))
    return fail();
  const SyncKind sync = lowered.sync;
  const LaunchShape launch = lowered.launch;
  const int root = lowered.root;
  const int64_t rowLength = lowered.rowLength;
  if (options.printIr && !options.printIrAfterAll)
    ir::print(program, *options.printIr);

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
  target.specFile = spec.bufferName;
  target.lineOf = [&sources](llvm::SMLoc loc) {
    return loc.isValid() ? sources.getLineAndColumn(loc).first : 0u;
  };

  CompiledCollective compiled;
  compiled.specName = program.name;
  compiled.kernelName = kernelName(program);
  compiled.cudaSource = generateCuda(program, target);
  if (options.formatSource)
    compiled.cudaSource = formatCudaSource(compiled.cudaSource);
  compiled.kind = program.kind;
  compiled.dtype = options.dtype;
  compiled.op = options.op;
  compiled.sync = sync;
  compiled.nranks = options.nranks;
  compiled.root = root;
  compiled.launch = launch;
  compiled.syncPointsPerCall = program.syncPoints;
  compiled.scratchCopies = program.scratchCopies;
  compiled.programmaticLaunch = options.programmaticLaunch;
  for (const auto& step : program.steps)
    compiled.stepNames.push_back(step.name);
  compiled.rowLength = rowLength;
  compiled.eps = options.eps;
  compiled.aux = describeAuxBuffers(program, options.nranks, rowLength);
  compiled.addRmsNorm = findAddRmsNorm(program);
  for (const ir::Buffer* buffer : program.scratchBuffers()) {
    ScratchBuffer scratch;
    scratch.name = buffer->name;
    ir::Env env;
    env.nranks = options.nranks;
    scratch.slots = int(ir::evaluate(buffer->slots, env).value_or(1));
    scratch.slotElems = elementCount(buffer->slotElems, options.nranks, rowLength);
    scratch.elementBytes = sizeOf(options.dtype);
    switch (buffer->access) {
    case ir::BufferAccess::Plain:
    case ir::BufferAccess::Sentinel:
      scratch.storage = ScratchStorage::Elements;
      break;
    case ir::BufferAccess::LL:
      scratch.storage = ScratchStorage::Packets;
      break;
    case ir::BufferAccess::AtomicLines:
      scratch.storage = ScratchStorage::AtomicLines;
      break;
    case ir::BufferAccess::LineHeads:
      scratch.storage = ScratchStorage::LineHeads;
      break;
    case ir::BufferAccess::LL128:
      scratch.storage =
          buffer->linesPerChunk ? ScratchStorage::LL128LinesPerChunk : ScratchStorage::LL128Lines;
      break;
    }
    if (buffer->access == ir::BufferAccess::Sentinel) {
      scratch.fillWidth = int(scratch.elementBytes);
      scratch.fillBits = scratch.elementBytes == 4 ? 0x80000000u : 0x8000u; // -0.0
    }
    compiled.scratch.push_back(std::move(scratch));
  }
  return compiled;
}

} // namespace collc
