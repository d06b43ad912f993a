#include "tools/bench/BenchPlot.h"

#include "tools/command/CommandSupport.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>
#include <string_view>
#include <utility>
#include <vector>

namespace collc::driver {

// PlotScript.cpp, generated from scripts/plot-bench.py (tools/CMakeLists.txt).
const std::vector<std::pair<std::string_view, std::string_view>>& embeddedPlotScripts();

namespace {

int plotError(const std::string& message) {
  llvm::errs() << "collc bench: --plot: " << message << "\n";
  return kUserError;
}

/// Runs python3 with `args`; its output goes where ours does, unless `quiet`.
int runPython(const std::string& python, std::vector<llvm::StringRef> args, bool quiet) {
  args.insert(args.begin(), python);
  std::vector<llvm::Optional<llvm::StringRef>> redirects;
  if (quiet)
    redirects = {llvm::None, llvm::StringRef(""), llvm::StringRef("")}; // "": /dev/null
  std::string error;
  bool failedToStart = false;
  int status =
      llvm::sys::ExecuteAndWait(python, args, llvm::None, redirects, 0, 0, &error, &failedToStart);
  return failedToStart ? -1 : status;
}

} // namespace

int renderBenchPlot(const std::string& jsonPath, const std::string& png) {
  auto python = llvm::sys::findProgramByName("python3");
  if (!python)
    return plotError("python3 was not found on the PATH; not plotted (the table, --csv and "
                     "--json hold the figures; scripts/plot-bench.py plots the JSON elsewhere)");
  if (runPython(*python, {"-c", "import matplotlib"}, /*quiet=*/true) != 0)
    return plotError("matplotlib is not installed for " + *python +
                     " (python3 -m pip install matplotlib, or apt-get install "
                     "python3-matplotlib); not plotted (the table, --csv and --json hold the "
                     "figures; scripts/plot-bench.py plots the JSON elsewhere)");
  llvm::SmallString<128> script;
  int fd = -1;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("collc-plot-bench", "py", fd, script))
    return plotError("cannot write the plotting script to a temporary file: " + ec.message());
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << embeddedPlotScripts().front().second;
  }
  llvm::outs().flush();
  llvm::errs().flush();
  int status = runPython(*python, {script.str(), jsonPath, png}, /*quiet=*/false);
  llvm::sys::fs::remove(script);
  if (status != 0)
    return plotError("scripts/plot-bench.py failed (exit status " + std::to_string(status) +
                     "); the table, --csv and --json hold the figures");
  return kSuccess;
}

} // namespace collc::driver
