/**
 * The attack battery: fresh attacks on every gate, each stating the verdict it expects
 * (see review/runner.ts). Run with `npm run review` (or `npm run review -- attacks`).
 *
 * - the wall: byte limits at multi-byte boundaries, NFC growth, combining runs, NFKC
 *   spellings of reserved names, surrogates, hostile grant lists, what the owner sees;
 * - the WebDAV URL builder: components and bases the WHATWG parser would rewrite;
 * - the approval parser, through the real engine: homoglyph verbs, invisible
 *   characters, other digit systems, smuggled lines, huge numbers, emoji sequences;
 * - the HTTP layer of the real daemon: Host, tokens, bodies, paths, the blob endpoint;
 * - the CLI's staging: symlink races, planted manifests, hard links, special files.
 */
import { cliGroup } from './attacks/cli.js';
import { httpGroup } from './attacks/http.js';
import { parserGroup } from './attacks/parser.js';
import { urlGroup } from './attacks/url.js';
import { wallGroup } from './attacks/wall.js';
import type { Group } from './runner.js';

export const groups: readonly Group[] = [wallGroup, urlGroup, parserGroup, httpGroup, cliGroup];
