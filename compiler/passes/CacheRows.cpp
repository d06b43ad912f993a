#include "compiler/ir/Visitor.h"
#include "compiler/passes/Passes.h"

namespace collc {
namespace {

/// More vectors per thread than this would spill registers.
constexpr int kMaxCachedVectors = 8;
const char* const kRowCache = "row_cache";

/// Statements (other than row-wise ones) that write `buffer`.
class Writers : public ir::Visitor {
public:
  explicit Writers(ir::BufferId buffer) : buffer_(buffer) {}
  int count = 0;

private:
  void target(const ir::Region& r) { count += r.buffer == buffer_ ? 1 : 0; }
  void visitPut(const ir::Put& s) override { target(s.target); }
  void visitAtomicAdd(const ir::AtomicAdd& s) override { target(s.target); }
  void visitAssign(const ir::Assign& s) override { target(s.target); }
  ir::BufferId buffer_;
};

class RowCaching : public ir::Mutator {
public:
  RowCaching(int threads, int64_t rowLength) : threads_(threads), rowLength_(rowLength) {}

private:
  ir::Stmt mutateRowLoop(const ir::RowLoop& s) override {
    const ir::RowStmt* rowStmt = nullptr;
    int rowStmts = 0, vectorElems = 1;
    for (const auto& stmt : s.body) {
      if (stmt->kind == ir::StmtKind::Row) {
        rowStmt = &stmt->as<ir::RowStmt>();
        ++rowStmts;
      } else if (stmt->kind == ir::StmtKind::ElementLoop) {
        vectorElems = stmt->as<ir::ElementLoop>().vectorElems;
      }
    }
    const int64_t perPass = int64_t(threads_) * vectorElems;
    const int vectors = int((rowLength_ + perPass - 1) / perPass);
    if (rowStmts != 1 || vectors > kMaxCachedVectors)
      return std::make_shared<ir::RowLoop>(s);
    // Exactly one writer of the rows, a reduce at the top of its loop (not in an `if` or a loop).
    const ir::BufferId rows = rowStmt->rows.region.buffer;
    Writers writers(rows);
    writers.visitAll(s.body);
    int reduces = 0;
    for (const auto& stmt : s.body)
      if (stmt->kind == ir::StmtKind::ElementLoop)
        for (const auto& inner : stmt->as<ir::ElementLoop>().body)
          if (inner->kind == ir::StmtKind::Assign && inner->as<ir::Assign>().reduce &&
              inner->as<ir::Assign>().target.buffer == rows)
            ++reduces;
    if (writers.count != 1 || reduces != 1)
      return std::make_shared<ir::RowLoop>(s);
    std::vector<ir::Stmt> body;
    for (const auto& stmt : s.body)
      body.push_back(cache(stmt, rows));
    return std::make_shared<ir::RowLoop>(s.loc, vectors, std::move(body));
  }

  /// The reduce keeps its result in the cache; the rowStmt reads the cache.
  static ir::Stmt cache(const ir::Stmt& stmt, ir::BufferId rows) {
    if (stmt->kind == ir::StmtKind::Row) {
      const auto& rowStmt = stmt->as<ir::RowStmt>();
      ir::Operand cached = rowStmt.rows;
      cached.load = ir::LoadKind::Register;
      cached.reg = kRowCache;
      return std::make_shared<ir::RowStmt>(rowStmt.loc, rowStmt.op, rowStmt.target, cached,
                                           rowStmt.params, rowStmt.store);
    }
    const auto& loop = stmt->as<ir::ElementLoop>();
    std::vector<ir::Stmt> body;
    for (const auto& inner : loop.body) {
      if (inner->kind == ir::StmtKind::Assign && inner->as<ir::Assign>().target.buffer == rows) {
        const auto& reduce = inner->as<ir::Assign>();
        body.push_back(std::make_shared<ir::Assign>(reduce.loc, reduce.target, reduce.reduce,
                                                    reduce.operands, reduce.addends, reduce.store,
                                                    kRowCache));
      } else {
        body.push_back(inner);
      }
    }
    return std::make_shared<ir::ElementLoop>(loop.loc, loop.bound, loop.shape, loop.vectorElems,
                                             loop.unroll, std::move(body));
  }

  int threads_;
  int64_t rowLength_;
};

} // namespace

ir::Program cacheRows(const ir::Program& program, int threads, int64_t rowLength) {
  RowCaching caching(threads, rowLength);
  return ir::mutateSteps(program, caching);
}

} // namespace collc
