/** Types of bin/node-check.js (plain JavaScript, so that any Node parses it). */
export declare const MIN_NODE_MAJOR: number;
export declare const SUPPORTED_NODES: string;

/** The Node an install was built with, as dist/node.json records it. */
export interface BuiltNode {
  readonly version: string;
  readonly modules: string;
  readonly path: string;
}

export declare function nodeProblem(
  running: { readonly version: string; readonly modules: string; readonly execPath: string },
  built: BuiltNode | undefined,
): { error: string; nextStep: string } | undefined;
