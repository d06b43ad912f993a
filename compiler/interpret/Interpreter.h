// A float64 interpreter of a program's data flow: the spec's, or the program a strategy lowered it
// to. It is the executor (compiler/execute/Walker.h) with float64 values; the proof's run
// (verify/Simulation.h) is the executor with contributions. It runs one call for one rank count
// and count, step after step and, within a step, rank after rank and statement after statement
// over whole regions. A verified program computes the same whatever the order its threads and
// ranks run in, so this order gives the result every correct kernel must give: the spec is its own
// reference, for any kind and any aux buffers. Run in place (or with aliased aux buffers), it gives
// the values such a call computes in this order; it cannot show a race, which the verifier's proof
// of the alias is for.
//
// Loads and stores are data moves whatever their kind (a poll reads, a flagged store writes);
// accumulation-line adds add into lines that start each call at zero, and taking a line zeroes it.
#ifndef COLLC_COMPILER_INTERPRET_INTERPRETER_H
#define COLLC_COMPILER_INTERPRET_INTERPRETER_H

#include "abi/Types.h"
#include "compiler/ir/IR.h"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace collc::interpret {

/// One call's configuration and the caller's data.
struct Call {
  int nranks = 2;
  int64_t count = 0; // n
  int root = 0;
  int64_t rowLength = 0; // a spec with `rows`: the row length (n a multiple of it)
  ReduceOp op = ReduceOp::Sum;
  double eps = 1e-6; // rmsnorm's epsilon
  /// input[r]: rank r's input buffer (its size: the input's slot size for this n).
  std::vector<std::vector<double>> input;
  /// aux[r][k]: rank r's aux buffer k (Buffer::auxIndex order), holding the caller's data.
  std::vector<std::vector<std::vector<double>>> aux;
  /// Buffers passed as one memory: the output as the input's (in place), and aux buffers as
  /// (written, read) auxIndex pairs, the memory holding the read buffer's data. Both of a pair
  /// must have one size.
  bool inPlace = false;
  std::vector<std::pair<int, int>> auxAliases;
  /// rowsAsWritten[r][k], where given (not empty): what a kernel left in rank r's aux buffer k.
  /// A quantizing row statement that reads that buffer normalizes these values, exactly, instead
  /// of the interpreted ones: the rows the kernel's norm read (rounded to T), so that a quantized
  /// element's bound is the norm's own float steps. The buffer itself is still interpreted (and
  /// checked) as the spec computes it.
  std::vector<std::vector<std::vector<double>>> rowsAsWritten;
};

/// What the call leaves in the caller's memory (a buffer passed as another's memory: that memory).
struct Result {
  std::vector<std::vector<double>> output;           // [rank]
  std::vector<std::vector<std::vector<double>>> aux; // [rank][auxIndex], written ones and not
};

/// How far a device's result may be from the interpreter's, element by element (interpretBounded):
/// the unit of each kind of rounding, the caller's model of its element type.
struct Rounding {
  double sumUnit = 0;  // a sum of k terms x_j is off by at most k * sumUnit * sum_j |x_j| ...
  double tiny = 0;     // ... plus this (a result flushed from subnormal to zero)
  double normUnit = 0; // rmsnorm's own steps (squares, rsqrt, products, last rounding), relative
  /// The same steps in float alone, without the rounding to T: the norm a quantized output is
  /// made from (relative).
  double floatNormUnit = 0;
  /// What a float result flushed from subnormal to zero is off by. A quantized output's norm made
  /// from the kernel's own rows never passes through T, so T's `tiny` (f16's 2^-14) is not its.
  double floatTiny = 0x1p-126;
};

/// The values of a call and, beside each, how far a device may be from it: 0 for a copy of an
/// input (the device moves its bits), NaN (with a NaN value) for an element no statement writes,
/// 0 for a NaN or infinite value (which must match exactly). A sum carries Rounding's bound over
/// its terms whatever the order the device adds them in; max and min carry the bound of the operand
/// they pick; rmsnorm carries the first-order effect of its rows' bounds on the row's scale, plus
/// its own rounding.
struct BoundedResult {
  Result value, bound;
  /// Quantized elements (E4M3) whose float64 value lies within the fp32 computation's error of a
  /// rounding boundary: there the device may round to either neighbouring code, and the bound
  /// spans both; everywhere else a quantized element's bound is 0 (bit for bit).
  int64_t nearRoundingBoundary = 0;
};

/// A program the interpreter cannot run as given: a size that does not evaluate, a region out of
/// range, data given of the wrong size. (A verified program never raises it.)
struct InterpretError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Sizes of the input and aux buffers of `program` for a call (to fill Call::input and aux).
int64_t inputElements(const ir::Program& program, const Call& call);
std::vector<int64_t> auxElements(const ir::Program& program, const Call& call);

/// Runs `steps` (the program's, repeated steps expanded for call.nranks) once.
Result interpret(const ir::Program& program, const std::vector<ir::Step>& steps, const Call& call);

/// interpret, with each element's bound under `rounding` (BoundedResult).
BoundedResult interpretBounded(const ir::Program& program, const std::vector<ir::Step>& steps,
                               const Call& call, const Rounding& rounding);

} // namespace collc::interpret

#endif // COLLC_COMPILER_INTERPRET_INTERPRETER_H
