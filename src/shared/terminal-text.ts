/**
 * Text that did not come from Skep (a server's log, the error a server sent back, a registry's
 * descriptions), made safe to write to a terminal. A terminal obeys the control functions of
 * ECMA-48 wherever they appear in its input: an ESC sequence (ECMA-48 §5.3: CSI moves the
 * cursor and erases lines, OSC 52 writes the clipboard, DCS talks to the terminal itself), their
 * 8-bit C1 forms (§5.2, 0x80–0x9F: U+009B is CSI on a terminal that takes them), the other C0
 * controls (§5.1: BS, VT, FF and a lone CR rewrite what was already shown, so a line can pose
 * as Skep's own). Each such character is shown instead as `\xNN`, its code in hex: nothing is
 * dropped, and the reader sees that the text carried controls. What stays as it is: LF, TAB, and
 * CR right before LF (a CRLF line end). Skep's own colours are added after this, never passed
 * through it.
 *
 * One character at a time, not whole sequences: the introducer is what a terminal acts on, so
 * showing it defuses the sequence, and text cut into chunks (a followed log) is handled the same
 * whatever the cut, except a CR at a chunk's end, which the caller holds until the next chunk.
 */

/** C0 controls but TAB and LF; DEL; C1 controls; a CR not followed by LF. */
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)/g;

/** `text` with every control character but LF, TAB and CRLF's CR shown as `\xNN`. */
export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}
