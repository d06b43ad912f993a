// Proofs of specs this process has already made. Compiling many variants of one spec (collc tune,
// bench, a dispatcher building its table) would otherwise prove the same spec again for every
// variant of a rank count; each variant's lowered program is still proved on its own. Only
// successes are kept, by the exact text of the spec and the rank counts proved (the caller's key):
// a failure must report its diagnostics again, and equal text is the same program.
#ifndef COLLC_COMPILER_PROOFMEMO_H
#define COLLC_COMPILER_PROOFMEMO_H

#include "compiler/Verifier.h"

#include <optional>
#include <string>

namespace collc {

/// The proof of the spec with this text (and whatever else `key` adds), if this process made it.
std::optional<VerifyResult> rememberedSpecProof(const std::string& key);
void rememberSpecProof(const std::string& key, const VerifyResult& proof);

} // namespace collc

#endif // COLLC_COMPILER_PROOFMEMO_H
