/**
 * Byte limits on paths and names, each named for who enforces it. Nextcloud's own limits
 * were measured on a real server (docs/nextcloud-behaviour.md); the wall's sit below them
 * so that everything the wall lets through can also be uploaded.
 */

/** The wall: the longest canonical path, in UTF-8 bytes (what is sent to Nextcloud). */
export const WALL_MAX_PATH_BYTES = 3000;
/** The wall: the longest path component, in UTF-8 bytes (under the upload limit below). */
export const WALL_MAX_COMPONENT_BYTES = 220;
/** Nextcloud: uploads of longer names fail (its `.part` name for them gets too long). */
export const NEXTCLOUD_MAX_UPLOAD_NAME_BYTES = 227;
/** Nextcloud: longer names are refused outright (400). */
export const NEXTCLOUD_MAX_NAME_BYTES = 250;
/** Apache in front of Nextcloud: longer URL paths are answered 403. */
export const NEXTCLOUD_MAX_URL_PATH_BYTES = 4000;

/** transfer.chunk_size when the config does not say: larger bodies upload in chunks. */
export const DEFAULT_CHUNK_SIZE = 16 * 2 ** 20;
