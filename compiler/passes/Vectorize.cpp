#include "compiler/ir/Visitor.h"
#include "compiler/passes/Passes.h"

namespace collc {
namespace {

class Vectorizer : public ir::Mutator {
public:
  Vectorizer(int vectorElems, int unroll) : vectorElems_(vectorElems), unroll_(unroll) {}

private:
  ir::Stmt mutateElementLoop(const ir::ElementLoop& s) override {
    return std::make_shared<ir::ElementLoop>(s.loc, s.bound, s.shape, vectorElems_, unroll_,
                                             s.body);
  }
  int vectorElems_, unroll_;
};

} // namespace

ir::Program vectorize(const ir::Program& program, int vectorElems, int unroll) {
  Vectorizer vectorizer(vectorElems, unroll);
  return ir::mutateSteps(program, vectorizer);
}

} // namespace collc
