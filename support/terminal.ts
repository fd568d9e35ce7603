/** What the tests look for in what a command printed to a terminal. */

/** Erase to the end of the line: how a progress frame ends. */
export const ERASE_LINE = '\u001b[K';

/**
 * Cursor hidden or shown, saved or restored, line wrapping turned off or on, the
 * alternate screen: terminal state a process killed mid-transfer would leave behind.
 */
// eslint-disable-next-line no-control-regex
export const TERMINAL_MODES = /\x1b\[\?25[lh]|\x1b[78]|\x1b\[\?7[lh]|\x1b\[\?1049/;
