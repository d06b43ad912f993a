#include "runtime/BundleFormat.h"

#include "runtime/ByteCodec.h"
#include "runtime/Sha256.h"

#include <cstring>
#include <fmt/format.h>
#include <set>

namespace collc {
namespace {

constexpr uint64_t kHeaderBytes = 24; // magic, version, section count, file bytes
constexpr uint64_t kChecksumBytes = 32;
constexpr const char* kCollectiveSection = "collective";
constexpr const char* kCubinSection = "cubin";
constexpr const char* kSourceSection = "cuda-source";
constexpr const char* kSpecSection = "spec";

void writeCount(ByteWriter& out, const ElementCount& count) {
  out.u64(count.perCount);
  out.u64(count.constant);
  out.boolean(count.chunked);
  out.i32(count.nranks);
  out.u64(count.perRow);
  out.u64(count.rowLength);
  out.u64(count.rowMultiple);
}

ElementCount readCount(ByteReader& in) {
  ElementCount count;
  count.perCount = in.u64("elements per count");
  count.constant = in.u64("constant elements");
  count.chunked = in.boolean("chunked");
  count.nranks = in.i32("chunk ranks");
  count.perRow = in.u64("elements per row");
  count.rowLength = in.u64("row length of a per-row size");
  count.rowMultiple = in.u64("row multiple");
  if (count.rowMultiple == 0)
    in.fail("row multiple", "0 rows is no multiple to round the row count up to");
  if (count.perRow != 0 && count.rowLength == 0)
    in.fail("row length of a per-row size", "a per-row size needs a row length of at least 1");
  return count;
}

std::string encodeCollective(const CompiledCollective& c) {
  ByteWriter out;
  out.string(c.specName);
  out.string(c.kernelName);
  out.string(name(c.kind));
  out.string(name(c.dtype));
  out.string(name(c.op));
  out.string(name(c.sync));
  out.i32(c.nranks);
  out.i32(c.root);
  out.i32(c.launch.blocks);
  out.i32(c.launch.threads);
  out.i32(c.launch.vectorBytes);
  out.i32(c.launch.unroll);
  out.i32(c.launch.wholeStores);
  out.u64(c.scratch.size());
  for (const ScratchBuffer& s : c.scratch) {
    out.string(s.name);
    out.i32(s.slots);
    writeCount(out, s.slotElems);
    out.u32(s.elementBytes);
    out.string(name(s.storage));
    out.u32(s.fillBits);
    out.i32(s.fillWidth);
  }
  out.i32(c.scratchCopies);
  out.boolean(c.programmaticLaunch);
  out.i32(c.syncPointsPerCall);
  out.u64(c.stepNames.size());
  for (const std::string& step : c.stepNames)
    out.string(step);
  out.i64(c.rowLength);
  uint32_t epsBits = 0;
  std::memcpy(&epsBits, &c.eps, sizeof epsBits);
  out.u32(epsBits);
  out.u64(c.aux.size());
  for (const AuxBuffer& a : c.aux) {
    out.string(a.name);
    writeCount(out, a.elems);
    out.boolean(a.written);
    out.string(a.fixedType ? name(*a.fixedType) : "T");
  }
  out.string(c.outputFixedType ? name(*c.outputFixedType) : "T");
  out.boolean(c.inPlace);
  out.u64(c.auxAliases.size());
  for (const auto& [written, read] : c.auxAliases) {
    out.i32(written);
    out.i32(read);
  }
  out.boolean(c.aliasesTogether);
  return out.take();
}

/// Parses the spelling of an enum with `parse`, failing the reader on one it does not know.
template <typename Enum>
Enum readEnum(ByteReader& in, const char* field, std::optional<Enum> (*parse)(std::string_view)) {
  std::string text = in.string(field);
  std::optional<Enum> value = parse(text);
  if (!value && !in.failed())
    in.fail(field, "unknown value '" + text + "'");
  return value.value_or(Enum{});
}

/// A buffer's element type: "T" (the variant's, nullopt) or a fixed one's name.
std::optional<ElementType> readElementType(ByteReader& in, const char* field) {
  std::string text = in.string(field);
  if (text == "T")
    return std::nullopt;
  std::optional<ElementType> type = parseName<ElementType>(text);
  if (!type && !in.failed())
    in.fail(field, "unknown value '" + text + "'");
  return type;
}

/// The values later code indexes with or divides by, checked so that a bundle that passed its
/// checksum but was written wrongly still cannot crash the runtime.
void checkCollective(ByteReader& in, const CompiledCollective& c) {
  auto positive = [&](const char* field, int64_t value) {
    if (value <= 0)
      in.fail(field, "must be positive, not " + std::to_string(value));
  };
  positive("nranks", c.nranks);
  positive("launch.blocks", c.launch.blocks);
  positive("launch.threads", c.launch.threads);
  positive("launch.vectorBytes", c.launch.vectorBytes);
  positive("launch.unroll", c.launch.unroll);
  positive("scratchCopies", c.scratchCopies);
  if (c.root < 0 || c.root >= c.nranks)
    in.fail("root", fmt::format("rank {} is not one of the {} ranks", c.root, c.nranks));
  if (c.rowLength < 0)
    in.fail("rowLength", "must not be negative");
  for (const ScratchBuffer& s : c.scratch) {
    positive("scratch slots", s.slots);
    positive("scratch element bytes", s.elementBytes);
    positive("scratch chunk ranks", s.slotElems.nranks);
  }
  for (const AuxBuffer& a : c.aux)
    positive("aux chunk ranks", a.elems.nranks);
  const int auxCount = int(c.aux.size());
  auto auxIndex = [&](const char* field, int index) {
    if (index < 0 || index >= auxCount)
      in.fail(field, fmt::format("aux buffer {} does not exist ({} aux buffers)", index, auxCount));
  };
  for (const auto& [written, read] : c.auxAliases) {
    auxIndex("auxAliases", written);
    auxIndex("auxAliases", read);
  }
}

CompiledCollective decodeCollective(ByteReader& in) {
  CompiledCollective c;
  c.specName = in.string("specName");
  c.kernelName = in.string("kernelName");
  c.kind = readEnum(in, "kind", parseCollectiveKind);
  c.dtype = readEnum(in, "dtype", parseDType);
  c.op = readEnum(in, "op", parseReduceOp);
  c.sync = readEnum(in, "sync", parseSyncKind);
  c.nranks = in.i32("nranks");
  c.root = in.i32("root");
  c.launch.blocks = in.i32("launch.blocks");
  c.launch.threads = in.i32("launch.threads");
  c.launch.vectorBytes = in.i32("launch.vectorBytes");
  c.launch.unroll = in.i32("launch.unroll");
  c.launch.wholeStores = in.i32("launch.wholeStores");
  c.scratch.resize(in.count("scratch count", 8));
  for (ScratchBuffer& s : c.scratch) {
    s.name = in.string("scratch name");
    s.slots = in.i32("scratch slots");
    s.slotElems = readCount(in);
    s.elementBytes = in.u32("scratch element bytes");
    s.storage = readEnum(in, "scratch storage", parseName<ScratchStorage>);
    s.fillBits = in.u32("scratch fill bits");
    s.fillWidth = in.i32("scratch fill width");
  }
  c.scratchCopies = in.i32("scratchCopies");
  c.programmaticLaunch = in.boolean("programmaticLaunch");
  c.syncPointsPerCall = in.i32("syncPointsPerCall");
  c.stepNames.resize(in.count("step count", 8));
  for (std::string& step : c.stepNames)
    step = in.string("step name");
  c.rowLength = in.i64("rowLength");
  const uint32_t epsBits = in.u32("eps");
  std::memcpy(&c.eps, &epsBits, sizeof epsBits);
  c.aux.resize(in.count("aux count", 8));
  for (AuxBuffer& a : c.aux) {
    a.name = in.string("aux name");
    a.elems = readCount(in);
    a.written = in.boolean("aux written");
    a.fixedType = readElementType(in, "aux element type");
  }
  c.outputFixedType = readElementType(in, "output element type");
  c.inPlace = in.boolean("inPlace");
  c.auxAliases.resize(in.count("auxAliases count", 8));
  for (auto& [written, read] : c.auxAliases) {
    written = in.i32("auxAliases written");
    read = in.i32("auxAliases read");
  }
  c.aliasesTogether = in.boolean("aliasesTogether");
  if (!in.failed() && in.remaining() != 0)
    in.fail("end", std::to_string(in.remaining()) + " bytes follow the last field");
  if (!in.failed())
    checkCollective(in, c);
  return c;
}

void writeSection(ByteWriter& out, std::string_view name, std::string_view payload) {
  out.string(name);
  out.string(payload);
}

} // namespace

std::string encodeBundle(const CollectiveBundle& bundle) {
  ByteWriter sections;
  uint32_t sectionCount = 0;
  writeSection(sections, kCollectiveSection, encodeCollective(bundle.compiled));
  ++sectionCount;
  for (const BundleCubin& cubin : bundle.cubins) {
    ByteWriter payload;
    payload.string(cubin.arch);
    payload.string(cubin.image);
    writeSection(sections, kCubinSection, payload.bytes());
    ++sectionCount;
  }
  if (!bundle.compiled.cudaSource.empty()) {
    writeSection(sections, kSourceSection, bundle.compiled.cudaSource);
    ++sectionCount;
  }
  if (!bundle.specText.empty()) {
    ByteWriter payload;
    payload.string(bundle.specName);
    payload.string(bundle.specText);
    writeSection(sections, kSpecSection, payload.bytes());
    ++sectionCount;
  }
  ByteWriter out;
  out.raw(std::string_view(kBundleMagic, sizeof kBundleMagic));
  out.u32(kBundleVersion);
  out.u32(sectionCount);
  out.u64(kHeaderBytes + sections.bytes().size() + kChecksumBytes);
  out.raw(sections.bytes());
  out.raw(sha256(out.bytes()));
  return out.take();
}

Expected<CollectiveBundle> decodeBundle(std::string_view bytes, const std::string& fileName) {
  auto failure = [&](const std::string& what) {
    return makeError(fmt::format("{}: {}", fileName, what));
  };
  const std::string_view magic(kBundleMagic, sizeof kBundleMagic);
  if (bytes.size() < magic.size() || bytes.substr(0, magic.size()) != magic)
    return failure(fmt::format("not a collc bundle: it does not start with \"{}\" (write one with "
                               "collc emit SPEC --emit=bundle)",
                               magic));
  ByteReader header(bytes.substr(magic.size()));
  const uint32_t version = header.u32("version");
  const uint32_t sectionCount = header.u32("section count");
  const uint64_t fileBytes = header.u64("file bytes");
  if (header.failed())
    return failure(fmt::format("truncated: {} bytes, shorter than the {}-byte header", bytes.size(),
                               kHeaderBytes));
  if (version != kBundleVersion)
    return failure(fmt::format("bundle format version {}, but this runtime reads only version {} "
                               "(write the bundle again with this release's collc)",
                               version, kBundleVersion));
  if (fileBytes < kHeaderBytes + kChecksumBytes)
    return failure(fmt::format("corrupt header: it gives the file {} bytes, fewer than a bundle "
                               "has",
                               fileBytes));
  if (bytes.size() < fileBytes)
    return failure(
        fmt::format("truncated: {} bytes of the {} its header gives", bytes.size(), fileBytes));
  if (bytes.size() > fileBytes)
    return failure(fmt::format("{} bytes, but its header gives {}: something was appended",
                               bytes.size(), fileBytes));
  const std::string_view body = bytes.substr(0, fileBytes - kChecksumBytes);
  const std::string_view stored = bytes.substr(body.size());
  const std::string computed = sha256(body);
  if (stored != computed)
    return failure(fmt::format("checksum mismatch: the file is corrupt (SHA-256 of its contents "
                               "is {}, the file says {})",
                               toLowerHex(computed), toLowerHex(stored)));

  CollectiveBundle bundle;
  bool sawCollective = false;
  std::set<std::string> archs;
  ByteReader sections(body.substr(kHeaderBytes));
  for (uint32_t i = 0; i < sectionCount; ++i) {
    const std::string sectionName = sections.string("section name");
    const std::string payload = sections.string("section payload");
    if (sections.failed())
      return failure(fmt::format("section {} of {}: {}", i + 1, sectionCount, sections.error()));
    ByteReader in(payload);
    if (sectionName == kCollectiveSection) {
      if (sawCollective)
        return failure("two 'collective' sections");
      sawCollective = true;
      std::string source = std::move(bundle.compiled.cudaSource);
      bundle.compiled = decodeCollective(in);
      bundle.compiled.cudaSource = std::move(source);
    } else if (sectionName == kCubinSection) {
      BundleCubin cubin;
      cubin.arch = in.string("arch");
      cubin.image = in.string("image");
      if (!in.failed() && in.remaining() != 0)
        in.fail("end", std::to_string(in.remaining()) + " bytes follow the image");
      if (!in.failed() && cubin.image.empty())
        in.fail("image", "the cubin is empty");
      if (!in.failed() && !archs.insert(cubin.arch).second)
        in.fail("arch", "a second cubin for " + cubin.arch);
      bundle.cubins.push_back(std::move(cubin));
    } else if (sectionName == kSourceSection) {
      bundle.compiled.cudaSource = payload;
    } else if (sectionName == kSpecSection) {
      bundle.specName = in.string("spec name");
      bundle.specText = in.string("spec text");
      if (!in.failed() && in.remaining() != 0)
        in.fail("end", std::to_string(in.remaining()) + " bytes follow the spec's text");
    }
    // A section of another name is skipped: a later writer may add what this reader can ignore.
    if (in.failed())
      return failure(fmt::format("section '{}': {}", sectionName, in.error()));
  }
  if (sections.remaining() != 0)
    return failure(fmt::format("{} bytes follow the {} sections the header counts",
                               sections.remaining(), sectionCount));
  if (!sawCollective)
    return failure("no 'collective' section: the bundle does not describe a collective");
  if (bundle.cubins.empty())
    return failure("no cubin: the bundle holds no kernel for any GPU architecture");
  return bundle;
}

} // namespace collc
