// The bundle: one compiled collective variant and its cubins, one per GPU architecture, as bytes
// a program can load later with the runtime alone (no NVRTC, no CUDA headers, no compiler). The
// layout is documented in docs/bundles.md; this file turns a bundle into bytes and back.
#ifndef COLLC_RUNTIME_BUNDLEFORMAT_H
#define COLLC_RUNTIME_BUNDLEFORMAT_H

#include "abi/CompiledCollective.h"
#include "runtime/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace collc {

inline constexpr char kBundleMagic[8] = {'C', 'O', 'L', 'L', 'C', 'B', 'N', 'D'};
/// The format version this runtime writes and the only one it reads.
/// 4: collc_params holds COLLC_MAX_RANKS = 72 heap pointers (ABI 2); 7: COLLC_MAX_AUX = 6 aux
/// pointers (ABI 3). A bundle's kernels were built against one layout.
/// 6: an element count holds a per-row part (perRow, rowLength, rowMultiple).
inline constexpr uint32_t kBundleVersion = 7;

/// One cubin of a bundle: the real architecture it was compiled for ("sm_90") and its ELF bytes.
struct BundleCubin {
  std::string arch;
  std::string image;
};

struct CollectiveBundle {
  /// Everything the runtime needs to create a CollectiveInstance. cudaSource is stored only when
  /// it is not empty (it is optional: the runtime never compiles it).
  CompiledCollective compiled;
  /// At most one per architecture.
  std::vector<BundleCubin> cubins;
  /// The spec the variant was compiled from (its name in diagnostics and its text), for a run
  /// that checks the bundle against the spec interpreted; stored only when the text is not empty.
  std::string specName, specText;
};

/// The bundle's bytes: header, sections, SHA-256 of everything before it.
std::string encodeBundle(const CollectiveBundle& bundle);

/// Reads the bytes of a bundle; `fileName` names it in errors ("FILE: not a collc bundle ...").
/// Wrong magic, another version, a length that disagrees with the data, a checksum mismatch,
/// a malformed section or a value the runtime does not know is an error, never a crash.
Expected<CollectiveBundle> decodeBundle(std::string_view bytes, const std::string& fileName);

} // namespace collc

#endif // COLLC_RUNTIME_BUNDLEFORMAT_H
