/** Types of bin/node-check.js (plain JavaScript, so that any Node parses it). */
export declare const MIN_NODE_MAJOR: number;
export declare const SUPPORTED_NODES: string;
/** How to get the pinned Node in the repository, in words. */
export declare const USE_NODE: string;

/** The Node an install was built with, as dist/node.json records it. */
export interface BuiltNode {
  readonly path: string;
  readonly version: string;
}

export declare function supportedNode(version: string): boolean;

export declare function nodeProblem(
  running: { readonly version: string; readonly execPath: string },
  built: BuiltNode | undefined,
): { error: string; nextStep: string } | undefined;
