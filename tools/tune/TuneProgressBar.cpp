#include "tools/tune/TuneProgressBar.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <llvm/Support/raw_ostream.h>
#include <unistd.h>

namespace collc::driver {

std::string formatDuration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  if (s < 60)
    return fmt::format("{}s", s);
  if (s < 3600)
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string formatTuneProgress(const TuneProgress& progress, double elapsedSeconds, size_t width) {
  const int total = std::max(progress.total, progress.done);
  const double fraction = total > 0 ? double(progress.done) / total : 0;
  const int filled = int(fraction * 20);
  std::string bar =
      "[" + std::string(size_t(filled), '#') + std::string(size_t(20 - filled), '-') + "]";
  std::string left = "?";
  if (progress.done > 0)
    left = formatDuration(elapsedSeconds / progress.done * (total - progress.done));
  std::string line = fmt::format("{} {:3}%  {}/{}  about {} left  {}  {}", bar, int(fraction * 100),
                                 progress.done, total, left, progress.stage, progress.what);
  if (line.size() > width)
    line.resize(width);
  return line;
}

TuneProgressBar::TuneProgressBar() : TuneProgressBar(isatty(STDERR_FILENO) != 0) {}

TuneProgressBar::TuneProgressBar(bool terminal) : terminal_(terminal) {}

void TuneProgressBar::update(const TuneProgress& progress) {
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (terminal_) {
    llvm::errs() << "\r\033[K" << formatTuneProgress(progress, elapsed, 150);
    llvm::errs().flush();
    shown_ = true;
    return;
  }
  const int total = std::max(1, std::max(progress.total, progress.done));
  const int tenth = progress.done * 10 / total;
  if (progress.stage == lastStage_ && tenth == lastTenth_)
    return;
  lastStage_ = progress.stage;
  lastTenth_ = tenth;
  llvm::errs() << "collc tune: " << formatTuneProgress(progress, elapsed, 200) << "\n";
  llvm::errs().flush();
}

void TuneProgressBar::finish() {
  if (terminal_ && shown_) {
    llvm::errs() << "\r\033[K";
    llvm::errs().flush();
  }
  shown_ = false;
}

} // namespace collc::driver
