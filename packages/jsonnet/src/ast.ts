/** Jsonnet abstract syntax tree (sugar kept; the compiler desugars). */
import type { Loc } from './errors.js';

export interface Param {
  name: string;
  def: Node | null;
  loc: Loc;
}
export interface Bind {
  name: string;
  params: Param[] | null;
  body: Node;
  loc: Loc;
}
export interface Arg {
  name: string | null;
  expr: Node;
}
export type CompSpec = { kind: 'for'; name: string; expr: Node; loc: Loc } | { kind: 'if'; cond: Node; loc: Loc };

/** 0 = `:` (inherit), 1 = `::` (hidden), 2 = `:::` (visible) */
export type Hide = 0 | 1 | 2;

export interface Field {
  /** name: either fixed string or computed expression */
  name: string | Node;
  hide: Hide;
  plus: boolean;
  params: Param[] | null;
  body: Node;
  loc: Loc;
}
export interface ObjAssert {
  cond: Node;
  msg: Node | null;
  loc: Loc;
}

export type Node =
  | { t: 'null'; loc: Loc }
  | { t: 'true'; loc: Loc }
  | { t: 'false'; loc: Loc }
  | { t: 'self'; loc: Loc }
  | { t: 'dollar'; loc: Loc }
  | { t: 'num'; value: number; loc: Loc }
  | { t: 'str'; value: string; block: boolean; loc: Loc }
  | { t: 'var'; name: string; loc: Loc }
  | { t: 'local'; binds: Bind[]; body: Node; loc: Loc }
  | { t: 'func'; params: Param[]; body: Node; loc: Loc }
  | { t: 'apply'; target: Node; args: Arg[]; tailstrict: boolean; loc: Loc }
  | { t: 'index'; target: Node; index: Node; loc: Loc }
  | { t: 'superIndex'; index: Node; loc: Loc }
  | { t: 'inSuper'; key: Node; loc: Loc }
  | { t: 'slice'; target: Node; from: Node | null; to: Node | null; step: Node | null; loc: Loc }
  | { t: 'binary'; op: string; left: Node; right: Node; loc: Loc }
  | { t: 'unary'; op: string; expr: Node; loc: Loc }
  | { t: 'if'; cond: Node; then: Node; else: Node | null; loc: Loc }
  | { t: 'error'; expr: Node; loc: Loc }
  | { t: 'assert'; cond: Node; msg: Node | null; rest: Node; loc: Loc }
  | { t: 'array'; elems: Node[]; loc: Loc }
  | { t: 'arrayComp'; body: Node; specs: CompSpec[]; loc: Loc }
  | { t: 'object'; fields: Field[]; locals: Bind[]; asserts: ObjAssert[]; loc: Loc }
  | { t: 'objectComp'; locals: Bind[]; key: Node; value: Node; plus: boolean; specs: CompSpec[]; loc: Loc }
  | { t: 'applyBrace'; left: Node; right: Node; loc: Loc }
  | { t: 'import'; kind: 'import' | 'importstr' | 'importbin'; file: string; loc: Loc };

export type NodeOf<T extends Node['t']> = Extract<Node, { t: T }>;
