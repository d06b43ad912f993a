// How the op library reports a failure: a c10::Error whose message starts with
// "collc.Error(STATUS): ", which collc.torch turns back into collc.Error (eager calls), and which
// reads as itself where torch raises it (torch.compile, graph replays).
#pragma once

#include <string>

namespace collc::torchops {

[[noreturn]] void raise(const std::string& message,
                        const std::string& status = "COLLC_INVALID_ARGUMENT");

} // namespace collc::torchops
