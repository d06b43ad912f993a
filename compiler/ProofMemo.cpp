#include "compiler/ProofMemo.h"

#include <deque>
#include <map>
#include <mutex>

namespace collc {
namespace {

/// Proofs kept; the oldest goes first. A spec text is at most 1 MiB (the parser's
/// limit), so the memo stays small.
constexpr size_t kMaxEntries = 64;

class Memo {
public:
  std::optional<VerifyResult> find(const std::string& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end())
      return std::nullopt;
    return it->second;
  }

  void insert(const std::string& key, const VerifyResult& value) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!entries_.emplace(key, value).second)
      return;
    order_.push_back(key);
    if (order_.size() > kMaxEntries) {
      entries_.erase(order_.front());
      order_.pop_front();
    }
  }

private:
  std::mutex mutex_;
  std::map<std::string, VerifyResult> entries_;
  std::deque<std::string> order_;
};

Memo& specProofs() {
  static Memo memo;
  return memo;
}

} // namespace

std::optional<VerifyResult> rememberedSpecProof(const std::string& key) {
  return specProofs().find(key);
}

void rememberSpecProof(const std::string& key, const VerifyResult& proof) {
  if (proof.ok)
    specProofs().insert(key, proof);
}

} // namespace collc
