// The registry (abi/Types.h) against every list that is not made from it: the public enums of
// include/collc/collc.h and the tables of python/collc/_capi.py (its strategies are the library's,
// through collc_sync_name: tests/capi checks that), and that each strategy's own file says it is
// that strategy and names embedded helpers. A value registered but missing from one of them, or
// present there but not registered, fails.
#include "abi/SizeMath.h"
#include "abi/Types.h"
#include "compiler/DevicePrelude.h"
#include "compiler/sync/Strategy.h"

#include <cctype>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace collc {
namespace {

std::string readSource(const std::string& relative) {
  std::ifstream in(std::string(COLLC_SOURCE_DIR) + "/" + relative);
  EXPECT_TRUE(in.good()) << "cannot read " << relative;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string upper(std::string_view text) {
  std::string result(text);
  for (char& c : result)
    c = char(std::toupper(static_cast<unsigned char>(c)));
  return result;
}

/// The enumerators of `typedef enum NAME { ... } NAME;` in collc.h, with their values.
std::map<std::string, int> cEnum(const std::string& header, const std::string& name) {
  const std::string open = "typedef enum " + name + " {";
  const size_t begin = header.find(open);
  EXPECT_NE(begin, std::string::npos) << "collc.h has no " << open;
  if (begin == std::string::npos)
    return {};
  const size_t end = header.find("} " + name + ";", begin);
  std::string body = header.substr(begin + open.size(), end - begin - open.size());
  body = std::regex_replace(body, std::regex(R"(/\*[^*]*\*/)"), "");
  std::map<std::string, int> values;
  const std::regex enumerator(R"((COLLC_[A-Z0-9_]+)\s*=\s*(-?[0-9]+))");
  for (std::sregex_iterator it(body.begin(), body.end(), enumerator), none; it != none; ++it)
    values[(*it)[1]] = std::stoi((*it)[2]);
  return values;
}

/// The enumerators the registry says `name` has: prefix + the spelling in capitals.
template <typename Entry, size_t N>
std::map<std::string, int> expectedEnum(const Entry (&table)[N], const std::string& prefix) {
  std::map<std::string, int> values;
  for (const auto& entry : table)
    values[prefix + upper(entry.name)] = entry.cValue;
  return values;
}

TEST(Registry, EveryStrategyHasItsLoweringAndEmbeddedHelpers) {
  std::set<std::string_view> embedded;
  for (const auto& [file, text] : deviceFiles())
    embedded.insert(file);
  for (const RegisteredSync& entry : kSyncRegistry) {
    const SyncStrategy& strategy = syncStrategy(entry.value);
    EXPECT_EQ(strategy.kind(), entry.value) << entry.name;
    for (std::string_view file : strategy.deviceHelpers())
      EXPECT_TRUE(embedded.count(file)) << entry.name << ": no compiler/device/" << file;
  }
}

template <typename Entry, size_t N> void expectDistinct(const Entry (&table)[N]) {
  std::set<std::string_view> names;
  std::set<int> cValues;
  for (const auto& entry : table) {
    EXPECT_TRUE(names.insert(entry.name).second) << entry.name << " is registered twice";
    if (entry.cValue >= 0) {
      EXPECT_TRUE(cValues.insert(entry.cValue).second) << entry.name << ": C value taken";
    }
    EXPECT_EQ(parseName<decltype(table[0].value)>(entry.name), entry.value);
    EXPECT_EQ(name(entry.value), entry.name);
  }
}

TEST(Registry, NamesAndCValuesAreDistinctAndParseBack) {
  expectDistinct(kCollectiveKindRegistry);
  expectDistinct(kDTypeRegistry);
  expectDistinct(kElementTypeRegistry);
  expectDistinct(kReduceOpRegistry);
  expectDistinct(kSyncRegistry);
  expectDistinct(kScratchStorageRegistry);
  for (const RegisteredSync& entry : kSyncRegistry)
    EXPECT_NE(entry.cValue, 0) << "0 is COLLC_SYNC_DEFAULT, the spec's own strategy";
}

TEST(Registry, ListsForMessagesAreMadeFromIt) {
  EXPECT_EQ(nameList<DType>(), "f32, f16 or bf16");
  EXPECT_EQ(nameList<ReduceOp>(", "), "sum, max, min");
  EXPECT_EQ(nameList<SyncKind>(" or ", /*withExperimental=*/false),
            "barrier, sentinel, ll or ll128_atomic");
  EXPECT_EQ(nameList<CollectiveKind>(),
            "allreduce, allgather, reducescatter, broadcast, reduce or alltoall");
}

TEST(Registry, CApiEnumsMatchIt) {
  const std::string header = readSource("include/collc/collc.h");
  EXPECT_EQ(cEnum(header, "collc_dtype"), expectedEnum(kDTypeRegistry, "COLLC_"));
  EXPECT_EQ(cEnum(header, "collc_element_type"),
            expectedEnum(kElementTypeRegistry, "COLLC_ELEMENT_"));
  // A variant's dtype is the element type of its `T` buffers, with the same C value and size.
  for (DType type : kAllDTypes) {
    EXPECT_EQ(cValueOf(elementTypeOf(type)), cValueOf(type)) << name(type);
    EXPECT_EQ(bytesOf(elementTypeOf(type), 3), 3 * sizeOf(type)) << name(type);
  }
  EXPECT_EQ(cEnum(header, "collc_reduce_op"), expectedEnum(kReduceOpRegistry, "COLLC_"));
  EXPECT_EQ(cEnum(header, "collc_collective"), expectedEnum(kCollectiveKindRegistry, "COLLC_"));
  std::map<std::string, int> syncs = expectedEnum(kSyncRegistry, "COLLC_SYNC_");
  syncs["COLLC_SYNC_DEFAULT"] = 0;
  EXPECT_EQ(cEnum(header, "collc_sync"), syncs);
}

/// The dict or list literal assigned to NAME at the start of a line of _capi.py (over lines).
std::string pythonAssignment(const std::string& source, const std::string& name) {
  const std::regex assignment("(^|\n)" + name + R"( = ([\{\[][^\}\]]*[\}\]]))");
  std::smatch match;
  EXPECT_TRUE(std::regex_search(source, match, assignment)) << "_capi.py has no " << name;
  return match.empty() ? "" : match[2].str();
}

/// `"name": value` pairs of a Python dict literal on one line.
std::map<std::string, int> pythonDict(const std::string& text) {
  std::map<std::string, int> values;
  const std::regex pair(R"re("([a-z0-9_]+)": ([0-9]+))re");
  for (std::sregex_iterator it(text.begin(), text.end(), pair), none; it != none; ++it)
    values[(*it)[1]] = std::stoi((*it)[2]);
  return values;
}

template <typename Entry, size_t N> std::map<std::string, int> byName(const Entry (&table)[N]) {
  std::map<std::string, int> values;
  for (const auto& entry : table)
    values[std::string(entry.name)] = entry.cValue;
  return values;
}

TEST(Registry, PythonTablesMatchIt) {
  const std::string source = readSource("python/collc/_capi.py");
  EXPECT_EQ(pythonDict(pythonAssignment(source, "OPS")), byName(kReduceOpRegistry));
  // Strategies are not listed there: SYNCS is made from the library's registry.
  EXPECT_NE(source.find("\nSYNCS = _registered_syncs()\n"), std::string::npos)
      << "_capi.py: SYNCS is not made from collc_sync_name";
  // KINDS: the list's index is the C value.
  std::map<std::string, int> kinds;
  const std::string list = pythonAssignment(source, "KINDS");
  const std::regex quoted(R"re("([a-z0-9_]+)")re");
  int index = 0;
  for (std::sregex_iterator it(list.begin(), list.end(), quoted), none; it != none; ++it)
    kinds[(*it)[1]] = index++;
  EXPECT_EQ(kinds, byName(kCollectiveKindRegistry));
  // Python names element types as torch does (float32); DTYPE_ALIASES maps collc's names there.
  const std::map<std::string, int> dtypes = pythonDict(pythonAssignment(source, "DTYPES"));
  const std::string aliases = pythonAssignment(source, "DTYPE_ALIASES");
  EXPECT_EQ(dtypes.size(), std::size(kDTypeRegistry));
  for (const auto& entry : kDTypeRegistry) {
    std::smatch alias;
    const std::string pattern = "\"" + std::string(entry.name) + R"re(": "([a-z0-9]+)")re";
    ASSERT_TRUE(std::regex_search(aliases, alias, std::regex(pattern)))
        << "DTYPE_ALIASES has no " << entry.name;
    auto found = dtypes.find(alias[1]);
    ASSERT_NE(found, dtypes.end()) << "DTYPES has no " << alias[1];
    EXPECT_EQ(found->second, entry.cValue) << entry.name;
  }
  // ELEMENT_TYPES: torch's name of each collc_element_type, the list's index its C value; the
  // variant's types first, as DTYPES has them.
  std::vector<std::string> elementTypes;
  const std::string typeList = pythonAssignment(source, "ELEMENT_TYPES");
  for (std::sregex_iterator it(typeList.begin(), typeList.end(), quoted), none; it != none; ++it)
    elementTypes.push_back((*it)[1]);
  ASSERT_EQ(elementTypes.size(), std::size(kElementTypeRegistry));
  for (const auto& [torchName, cValue] : dtypes)
    EXPECT_EQ(elementTypes[size_t(cValue)], torchName);
  EXPECT_EQ(elementTypes[size_t(cValueOf(ElementType::F8E4M3))], "float8_e4m3fn");
  EXPECT_EQ(elementTypes[size_t(cValueOf(ElementType::F4E2M1))], "float4_e2m1fn_x2");
}

TEST(Registry, BytesOfAnElementTypeRoundUpHalfBytes) {
  EXPECT_EQ(bytesOf(ElementType::F8E4M3, 7), 7u);
  EXPECT_EQ(bytesOf(ElementType::F4E2M1, 0), 0u);
  EXPECT_EQ(bytesOf(ElementType::F4E2M1, 7), 4u); // element 6 in byte 3's low nibble
  EXPECT_EQ(bytesOf(ElementType::F4E2M1, 4096), 2048u);
  EXPECT_EQ(bytesOf(ElementType::F32, kMaxSize), kTooLarge);
  EXPECT_EQ(bytesOf(ElementType::F4E2M1, kTooLarge), kTooLarge);
}

} // namespace
} // namespace collc
