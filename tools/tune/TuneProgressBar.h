// The progress of `collc tune` on stderr, with the time left. On a terminal one line is redrawn
// in place; otherwise (a log, a pipe) a plain line is written when a stage starts and at every
// tenth of the work, so that redirected output is never garbled by carriage returns.
#ifndef COLLC_TOOLS_TUNE_TUNEPROGRESSBAR_H
#define COLLC_TOOLS_TUNE_TUNEPROGRESSBAR_H

#include "tools/tune/TuneSearch.h"

#include <chrono>
#include <string>

namespace collc::driver {

/// "[#####-----]  52%  130/250  about 3m10s left  stage 2: blocks  allreduce_... at 4K", cut to
/// `width` characters. The time left is elapsed / done * (total - done); "?" before any is done.
std::string formatTuneProgress(const TuneProgress& progress, double elapsedSeconds, size_t width);

/// "45s", "3m10s", "1h02m".
std::string formatDuration(double seconds);

class TuneProgressBar {
public:
  /// `terminal`: redraw in place (default: whether stderr is a terminal).
  TuneProgressBar();
  explicit TuneProgressBar(bool terminal);
  ~TuneProgressBar() { finish(); }
  void update(const TuneProgress& progress);
  /// Clears a redrawn line; after it the next output starts on a clean line.
  void finish();

private:
  bool terminal_;
  bool shown_ = false;
  int lastTenth_ = -1;
  std::string lastStage_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

} // namespace collc::driver

#endif // COLLC_TOOLS_TUNE_TUNEPROGRESSBAR_H
