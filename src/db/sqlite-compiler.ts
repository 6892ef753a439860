import { type BinaryOperationNode, type LimitNode, OperatorNode, type QueryCompiler, SqliteDialect, SqliteQueryCompiler, ValueNode } from 'kysely'

/** The operators whose right side, a bound parameter, SQLite reads at planning time (its LIKE optimization). */
const PATTERN_OPERATORS = new Set(['like', 'not like'])

/**
 * SQLite's query compiler, with the two bound parameters SQLite's planner reads written so that it does not.
 *
 * SQLite (3.53 here) plans with the value bound to a `LIMIT ?` and to the pattern of a `LIKE ?`, and marks the
 * statement to be prepared again whenever that parameter is bound, even to the same value: every run of such a
 * statement compiled it again. Measured with better-sqlite3 alone: a three-table select 3.9 µs with `limit 1`,
 * 11.8 µs with `limit ?`, 3.0 µs with `limit cast(? as integer)`; the same with `like ?` 14.8 µs against 3.1 µs
 * with `like cast(? as text)`; the outbox dispatcher's claim (a union of windowed subqueries, three limits)
 * 176–217 µs against 13 µs with its values written in (docs/performance.md). Written as a cast, the value is still bound (one statement text for every value) but the
 * planner no longer reads it; it plans as it would for an unknown limit, as SQLite did before it read them.
 * `OFFSET ?` is not read at planning time and stays as it is.
 *
 * Raw `sql` templates are not compiled here: one that binds a LIKE pattern writes the cast itself
 * (products.repository.ts, discounts.repository.ts), and a fixed limit is written as a literal (`sql.lit`).
 */
export class SqliteStatementCompiler extends SqliteQueryCompiler {
  protected override visitLimit(node: LimitNode): void {
    if (!ValueNode.is(node.limit) || node.limit.immediate === true) return super.visitLimit(node)
    this.append('limit cast(')
    this.visitNode(node.limit)
    this.append(' as integer)')
  }

  protected override visitBinaryOperation(node: BinaryOperationNode): void {
    const { leftOperand, operator, rightOperand } = node
    if (!OperatorNode.is(operator) || !PATTERN_OPERATORS.has(operator.operator) || !ValueNode.is(rightOperand) || rightOperand.immediate === true) {
      return super.visitBinaryOperation(node)
    }
    this.visitNode(leftOperand)
    this.append(' ')
    this.visitNode(operator)
    this.append(' cast(')
    this.visitNode(rightOperand)
    this.append(' as text)')
  }
}

/**
 * Kysely's SQLite dialect with that compiler: every Kysely instance of the code over SQLite is made with it (the
 * service's connection extends it; the copy tool and the tests use it), so that `prepared()` statements, compiled
 * once per adapter and shared by them all, have one text whoever compiled them first.
 */
export class SqliteStatementDialect extends SqliteDialect {
  override createQueryCompiler(): QueryCompiler {
    return new SqliteStatementCompiler()
  }
}
