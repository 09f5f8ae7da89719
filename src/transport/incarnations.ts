/**
 * What the mesh may read and move of the IncarnationBook (src/core/incarnations.ts, the one
 * home of every peer's incarnations): the handshake's stages, which incarnation of each peer
 * was admitted and which are refused forever (docs/design.md section 4: incarnations are
 * ordered, so a paused zombie of an older process can never re-associate; section 5: an
 * evicted incarnation is refused from then on). The session owns the book and hands it to
 * its Membership and its Mesh; a mesh run alone gets a book of its own.
 */
import type { IncarnationBook } from '../core/incarnations.js';

export type { IncarnationNews, IncarnationRefusal } from '../core/incarnations.js';

/** The mesh's narrow view of the IncarnationBook: stages 1 (admitted) and 6 (refused). */
export type IncarnationGate = Pick<IncarnationBook, 'capacity' | 'known' | 'newest' | 'isRefused' | 'check' | 'admit' | 'refuse' | 'refuseAhead' | 'isAhead'>;
