// Bundles without a GPU or NVRTC: stdlib variants (rooted kinds, aux buffers, every scratch
// storage the strategies use) written and loaded back with every field and cubin byte equal; and
// damaged files (a flipped byte, every truncation, wrong magic, an earlier or later version,
// appended bytes, resealed garbage) refused with an error that names the file, never a crash.
#include "compiler/Compile.h"
#include "compiler/DiagnosticText.h"
#include "runtime/BundleFile.h"
#include "runtime/ByteCodec.h"
#include "runtime/Sha256.h"

#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

namespace collc {
namespace {

struct BundleCase {
  const char* spec;
  SyncKind sync;
  DType dtype;
  ReduceOp op;
  int nranks;
  int root;
  int64_t rowLength;
};

const BundleCase kCases[] = {
    {"allreduce_oneshot", SyncKind::Barrier, DType::F32, ReduceOp::Sum, 2, 0, 0},
    {"allreduce_oneshot", SyncKind::LL, DType::BF16, ReduceOp::Max, 8, 0, 0},
    {"allreduce_twoshot", SyncKind::Sentinel, DType::F16, ReduceOp::Sum, 4, 0, 0},
    {"allreduce_twoshot", SyncKind::LL128Atomic, DType::BF16, ReduceOp::Sum, 4, 0, 0},
    {"allreduce_rmsnorm", SyncKind::Barrier, DType::BF16, ReduceOp::Sum, 2, 0, 1024},
    {"allreduce_rmsnorm", SyncKind::LL, DType::F32, ReduceOp::Sum, 4, 0, 2048},
    {"allreduce_rmsnorm_fp8", SyncKind::Sentinel, DType::BF16, ReduceOp::Sum, 3, 0, 1024},
    {"broadcast_direct", SyncKind::Barrier, DType::F16, ReduceOp::Sum, 4, 3, 0},
    {"reduce_direct", SyncKind::Barrier, DType::F32, ReduceOp::Min, 3, 1, 0},
    {"allgather_ring", SyncKind::Barrier, DType::BF16, ReduceOp::Sum, 5, 0, 0},
};

std::string caseName(const BundleCase& c) {
  return std::string(c.spec) + "_" + std::string(name(c.sync)) + "_" + std::string(name(c.dtype)) +
         "_" + std::string(name(c.op)) + "_r" + std::to_string(c.nranks) + "_root" +
         std::to_string(c.root);
}

CompiledCollective compileCase(const BundleCase& c) {
  auto spec = loadSpec(c.spec);
  EXPECT_TRUE(bool(spec)) << toString(spec.takeError());
  if (!spec)
    return {};
  CompileOptions options;
  options.sync = c.sync;
  options.dtype = c.dtype;
  options.op = c.op;
  options.nranks = c.nranks;
  options.root = c.root;
  options.rowLength = c.rowLength;
  options.formatSource = false;
  std::string diagnostics;
  DiagnosticText out(diagnostics);
  auto compiled = compileCollective(*spec, options, out);
  EXPECT_TRUE(bool(compiled)) << toString(compiled.takeError()) << out.str();
  return compiled ? std::move(*compiled) : CompiledCollective{};
}

/// Stand-ins for cubins: the format stores bytes, so every byte value (NUL included) must survive.
std::vector<BundleCubin> fakeCubins() {
  std::string every;
  for (int i = 0; i < 512; ++i)
    every.push_back(char(i * 7 % 256));
  return {{"sm_80", every},
          {"sm_90", std::string("\x7f"
                                "ELF\0\0\x01",
                                7) +
                        every}};
}

void expectSameCount(const ElementCount& a, const ElementCount& b, const std::string& what) {
  EXPECT_EQ(a.perCount, b.perCount) << what;
  EXPECT_EQ(a.constant, b.constant) << what;
  EXPECT_EQ(a.chunked, b.chunked) << what;
  EXPECT_EQ(a.nranks, b.nranks) << what;
  EXPECT_EQ(a.perRow, b.perRow) << what;
  EXPECT_EQ(a.rowLength, b.rowLength) << what;
  EXPECT_EQ(a.rowMultiple, b.rowMultiple) << what;
}

/// Every field of CompiledCollective, one by one.
void expectSameCollective(const CompiledCollective& a, const CompiledCollective& b) {
  EXPECT_EQ(a.specName, b.specName);
  EXPECT_EQ(a.kernelName, b.kernelName);
  EXPECT_EQ(a.cudaSource, b.cudaSource);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.sync, b.sync);
  EXPECT_EQ(a.nranks, b.nranks);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.launch.blocks, b.launch.blocks);
  EXPECT_EQ(a.launch.threads, b.launch.threads);
  EXPECT_EQ(a.launch.vectorBytes, b.launch.vectorBytes);
  EXPECT_EQ(a.launch.unroll, b.launch.unroll);
  EXPECT_EQ(a.launch.wholeStores, b.launch.wholeStores);
  ASSERT_EQ(a.scratch.size(), b.scratch.size());
  for (size_t i = 0; i < a.scratch.size(); ++i) {
    const ScratchBuffer &x = a.scratch[i], &y = b.scratch[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.slots, y.slots);
    expectSameCount(x.slotElems, y.slotElems, "scratch " + x.name);
    EXPECT_EQ(x.elementBytes, y.elementBytes);
    EXPECT_EQ(x.storage, y.storage);
    EXPECT_EQ(x.fillBits, y.fillBits);
    EXPECT_EQ(x.fillWidth, y.fillWidth);
  }
  EXPECT_EQ(a.scratchCopies, b.scratchCopies);
  EXPECT_EQ(a.programmaticLaunch, b.programmaticLaunch);
  EXPECT_EQ(a.syncPointsPerCall, b.syncPointsPerCall);
  EXPECT_EQ(a.stepNames, b.stepNames);
  EXPECT_EQ(a.rowLength, b.rowLength);
  EXPECT_EQ(a.eps, b.eps);
  ASSERT_EQ(a.aux.size(), b.aux.size());
  for (size_t i = 0; i < a.aux.size(); ++i) {
    EXPECT_EQ(a.aux[i].name, b.aux[i].name);
    expectSameCount(a.aux[i].elems, b.aux[i].elems, "aux " + a.aux[i].name);
    EXPECT_EQ(a.aux[i].written, b.aux[i].written);
    EXPECT_EQ(a.aux[i].fixedType, b.aux[i].fixedType);
  }
  EXPECT_EQ(a.outputFixedType, b.outputFixedType);
  EXPECT_EQ(a.inPlace, b.inPlace);
  EXPECT_EQ(a.auxAliases, b.auxAliases);
  EXPECT_EQ(a.aliasesTogether, b.aliasesTogether);
}

/// A file in the test's temporary directory, removed afterwards.
class TempFile {
public:
  explicit TempFile(const std::string& name)
      : path_(::testing::TempDir() + "collc-bundle-" + std::to_string(::getpid()) + "-" + name) {}
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }
  void write(const std::string& bytes) const {
    std::ofstream(path_, std::ios::binary | std::ios::trunc) << bytes;
  }

private:
  std::string path_;
};

class BundleRoundTrip : public ::testing::TestWithParam<BundleCase> {};

TEST_P(BundleRoundTrip, EveryFieldAndCubinSurvives) {
  const CompiledCollective compiled = compileCase(GetParam());
  ASSERT_FALSE(compiled.kernelName.empty());
  for (bool withSource : {false, true}) {
    SCOPED_TRACE(withSource ? "with the CUDA source" : "without the CUDA source");
    CollectiveBundle bundle;
    bundle.compiled = compiled;
    if (!withSource)
      bundle.compiled.cudaSource.clear();
    bundle.cubins = fakeCubins();
    if (withSource) { // the spec's text travels with the CUDA source here, for the test's sake
      bundle.specName = GetParam().spec;
      bundle.specText = "collective x kind allreduce\n# any bytes: \x01\xff";
    }
    TempFile file(caseName(GetParam()) + ".collb");
    ASSERT_FALSE(bool(writeBundle(file.path(), bundle)));
    EXPECT_TRUE(isBundleFile(file.path()));
    Expected<LoadedBundle> loaded = loadBundle(file.path());
    ASSERT_TRUE(bool(loaded)) << toString(loaded.takeError());
    expectSameCollective(bundle.compiled, loaded->compiled());
    EXPECT_EQ(loaded->contents.specName, bundle.specName);
    EXPECT_EQ(loaded->contents.specText, bundle.specText);
    ASSERT_EQ(loaded->contents.cubins.size(), bundle.cubins.size());
    for (size_t i = 0; i < bundle.cubins.size(); ++i) {
      EXPECT_EQ(loaded->contents.cubins[i].arch, bundle.cubins[i].arch);
      EXPECT_EQ(loaded->contents.cubins[i].image, bundle.cubins[i].image);
    }
    Expected<std::string> sm90 = loaded->cubinFor("sm_90");
    ASSERT_TRUE(bool(sm90)) << toString(sm90.takeError());
    EXPECT_EQ(*sm90, bundle.cubins[1].image);
  }
}

INSTANTIATE_TEST_SUITE_P(StdlibVariants, BundleRoundTrip, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<BundleCase>& info) {
                           return caseName(info.param);
                         });

TEST(BundleRoundTrip, CoversAuxBuffersRootsAndStorages) {
  // The cases above are meant to exercise these; say so if a compiler change stops them.
  bool aux = false, rows = false, root = false, packets = false, lines = false, fill = false;
  for (const BundleCase& c : kCases) {
    CompiledCollective compiled = compileCase(c);
    aux |= !compiled.aux.empty();
    rows |= compiled.rowLength > 0;
    root |= compiled.root != 0;
    for (const ScratchBuffer& s : compiled.scratch) {
      packets |= s.storage == ScratchStorage::Packets;
      lines |= s.storage == ScratchStorage::AtomicLines || s.storage == ScratchStorage::LineHeads;
      fill |= s.fillWidth != 0;
    }
  }
  EXPECT_TRUE(aux && rows && root && packets && lines && fill);
}

/// A small valid bundle's bytes.
std::string validBytes() {
  CollectiveBundle bundle;
  bundle.compiled = compileCase(kCases[4]); // allreduce_rmsnorm: aux buffers and rows
  bundle.compiled.cudaSource.clear();       // small, so that every byte of it can be damaged
  bundle.cubins = fakeCubins();
  return encodeBundle(bundle);
}

/// `bytes` with its checksum recomputed: damage that only a field's own check can find.
std::string resealed(std::string bytes) {
  bytes.resize(bytes.size() - 32);
  return bytes + sha256(bytes);
}

Error decodeError(const std::string& bytes) {
  Expected<CollectiveBundle> decoded = decodeBundle(bytes, "damaged.collb");
  return decoded ? Error::success() : decoded.takeError();
}

::testing::AssertionResult refusedWith(const std::string& bytes, const std::string& words) {
  Error error = decodeError(bytes);
  if (!error)
    return ::testing::AssertionFailure() << "decoded without an error";
  const std::string message = error.message();
  if (message.rfind("damaged.collb: ", 0) != 0 || message.find(words) == std::string::npos)
    return ::testing::AssertionFailure() << "the error does not say '" << words << "': " << message;
  return ::testing::AssertionSuccess();
}

TEST(BundleDamage, TheValidBytesDecode) {
  EXPECT_FALSE(bool(decodeError(validBytes())));
}

TEST(BundleDamage, AFlippedByteFailsTheChecksum) {
  const std::string valid = validBytes();
  for (size_t at : {size_t(30), valid.size() / 2, valid.size() - 40, valid.size() - 1}) {
    std::string bytes = valid;
    bytes[at] ^= 0x10;
    EXPECT_TRUE(refusedWith(bytes, "checksum mismatch")) << "byte " << at;
  }
}

TEST(BundleDamage, EveryTruncationIsRefused) {
  const std::string valid = validBytes();
  for (size_t size = 0; size < valid.size(); ++size)
    ASSERT_TRUE(refusedWith(valid.substr(0, size), size < 8 ? "not a collc bundle" : "truncated"))
        << size << " bytes";
}

TEST(BundleDamage, WrongMagic) {
  std::string bytes = validBytes();
  bytes[0] = 'X';
  EXPECT_TRUE(refusedWith(bytes, "not a collc bundle"));
  EXPECT_TRUE(refusedWith("collective allreduce_oneshot kind allreduce\n", "not a collc bundle"));
}

TEST(BundleDamage, ALaterVersion) {
  std::string bytes = validBytes();
  bytes[8] = char(kBundleVersion + 1);
  EXPECT_TRUE(refusedWith(resealed(bytes), "bundle format version " +
                                               std::to_string(kBundleVersion + 1) +
                                               ", but this runtime reads only version " +
                                               std::to_string(kBundleVersion)));
}

// Version 2 held the fused add + RMSNorm's aux indices in the collective section; this runtime
// says which version it reads rather than misreading the fields after them.
TEST(BundleDamage, AnEarlierVersion) {
  std::string bytes = validBytes();
  // Version 6: kernels whose collc_params holds 4 aux pointers.
  bytes[8] = char(6);
  EXPECT_TRUE(refusedWith(resealed(bytes), "bundle format version 6, but this runtime reads only "
                                           "version 7 (write the bundle again with this "
                                           "release's collc)"));
}

TEST(BundleDamage, AppendedBytes) {
  EXPECT_TRUE(refusedWith(validBytes() + "x", "something was appended"));
}

// Damage behind a valid checksum (a writer's bug, not the disk's): every single-byte change after
// the header, resealed, either still decodes or is refused with the file named; never a crash.
TEST(BundleDamage, ResealedGarbageNeverCrashes) {
  const std::string valid = validBytes();
  int refused = 0;
  for (size_t at = 24; at + 32 < valid.size(); ++at)
    for (uint8_t mask : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xff)}) {
      std::string bytes = valid;
      bytes[at] = char(uint8_t(bytes[at]) ^ mask);
      Error error = decodeError(resealed(bytes));
      if (error) {
        ++refused;
        ASSERT_EQ(error.message().rfind("damaged.collb: ", 0), 0u) << error.message();
      }
    }
  EXPECT_GT(refused, 0);
}

TEST(BundleDamage, ValuesTheRuntimeWouldTrip) {
  CollectiveBundle bundle;
  bundle.compiled = compileCase(kCases[4]);
  bundle.cubins = fakeCubins();
  CollectiveBundle badRoot = bundle;
  badRoot.compiled.root = 7;
  EXPECT_TRUE(refusedWith(encodeBundle(badRoot), "field 'root': rank 7 is not one of the 2"));
  CollectiveBundle badAux = bundle;
  badAux.compiled.auxAliases = {{0, 9}};
  EXPECT_TRUE(refusedWith(encodeBundle(badAux), "field 'auxAliases': aux buffer 9"));
  CollectiveBundle noMultiple = bundle;
  noMultiple.compiled.aux.at(0).elems.rowMultiple = 0;
  EXPECT_TRUE(refusedWith(encodeBundle(noMultiple), "field 'row multiple'"));
  CollectiveBundle noRowLength = bundle;
  noRowLength.compiled.aux.at(0).elems.perRow = 1;
  noRowLength.compiled.aux.at(0).elems.rowLength = 0;
  EXPECT_TRUE(refusedWith(encodeBundle(noRowLength), "field 'row length of a per-row size'"));
  CollectiveBundle twoSm90 = bundle;
  twoSm90.cubins.push_back(twoSm90.cubins.back());
  EXPECT_TRUE(refusedWith(encodeBundle(twoSm90), "a second cubin for sm_90"));
  CollectiveBundle none = bundle;
  none.cubins.clear();
  EXPECT_TRUE(refusedWith(encodeBundle(none), "no cubin"));
}

// A per-row size (a per-token scale, padded block scales) comes back as it was written.
TEST(BundleRoundTrip, PerRowCounts) {
  CollectiveBundle bundle;
  bundle.compiled = compileCase(kCases[4]);
  bundle.cubins = fakeCubins();
  ElementCount& padded = bundle.compiled.aux.at(0).elems;
  padded = ElementCount{};
  padded.constant = 3;
  padded.perRow = 256;
  padded.rowLength = 4096;
  padded.rowMultiple = 128;
  auto decoded = decodeBundle(encodeBundle(bundle), "per-row.collb");
  ASSERT_TRUE(bool(decoded)) << toString(decoded.takeError());
  expectSameCount(decoded->compiled.aux.at(0).elems, padded, "aux 0");
  EXPECT_EQ(decoded->compiled.aux.at(0).elems.at(7 * 4096), 3u + 128u * 256u);
}

// A section this reader does not know is skipped, so a later writer may add one within version 1.
TEST(BundleFormat, UnknownSectionsAreSkipped) {
  const std::string valid = validBytes();
  ByteWriter extra;
  extra.string("notes");
  extra.string("written by a later collc");
  std::string bytes = valid.substr(0, valid.size() - 32) + extra.bytes();
  ByteReader header(std::string_view(bytes).substr(8));
  header.u32("version");
  const uint32_t sections = header.u32("sections");
  ByteWriter counts;
  counts.u32(sections + 1);
  counts.u64(bytes.size() + 32);
  bytes.replace(12, 12, counts.bytes());
  Expected<CollectiveBundle> decoded = decodeBundle(bytes + sha256(bytes), "extra.collb");
  ASSERT_TRUE(bool(decoded)) << toString(decoded.takeError());
  EXPECT_EQ(decoded->cubins.size(), 2u);
}

TEST(BundleFile, MissingFileAndMissingArch) {
  Expected<LoadedBundle> missing = loadBundle("/nonexistent/x.collb");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(toString(missing.takeError()).find("cannot read bundle '/nonexistent/x.collb'"),
            std::string::npos);
  EXPECT_FALSE(isBundleFile("/nonexistent/x.collb"));

  TempFile file("arch.collb");
  file.write(validBytes());
  Expected<LoadedBundle> loaded = loadBundle(file.path());
  ASSERT_TRUE(bool(loaded)) << toString(loaded.takeError());
  EXPECT_EQ(loaded->archs(), (std::vector<std::string>{"sm_80", "sm_90"}));
  Expected<std::string> sm100 = loaded->cubinFor("sm_100");
  ASSERT_FALSE(bool(sm100));
  EXPECT_EQ(toString(sm100.takeError()),
            file.path() + ": no cubin for sm_100; the bundle has sm_80, sm_90 (write it again "
                          "with --arch=sm_100)");
}

TEST(BundleFile, ADamagedFileIsNamed) {
  TempFile file("damaged.collb");
  std::string bytes = validBytes();
  bytes[bytes.size() / 2] ^= 1;
  file.write(bytes);
  Expected<LoadedBundle> loaded = loadBundle(file.path());
  ASSERT_FALSE(bool(loaded));
  EXPECT_EQ(toString(loaded.takeError()).rfind(file.path() + ": checksum mismatch", 0), 0u);
}

} // namespace
} // namespace collc
