/**
 * The Nextcloud series the fake answers as. It follows 34 (the current series) by
 * default; `series: 29` switches on each difference observed on 29.0.5, the oldest
 * series we keep. Every entry here is held to the real server of its series by a case
 * of the differential suite (test/real/differential), run against both servers in CI.
 */
export type Series = 34 | 29;

export const SERIES: readonly Series[] = [34, 29];

/** A Sabre error answer: status, exception class, message. */
export interface SabreAnswer {
  status: number;
  exception: string;
  message: string;
}

export interface SeriesTraits {
  /** status.php and the capabilities' `version`. */
  version: { major: number; minor: number; micro: number };
  /** A PUT or MOVE onto a `*.part` name (Nextcloud's upload temp names). */
  partName(name: string): SabreAnswer;
  /** Any request that names `.htaccess` (but MKCOL where `htaccessMkcol` is set). */
  htaccess: SabreAnswer;
  /** A MKCOL of `.htaccess`, where it differs. */
  htaccessMkcol?: SabreAnswer;
  /** A 404's message names the path with this prefix (34: one slash, 29: two). */
  notFoundPrefix: string;
  /** The message of the 500 a GET of a version whose file a restore took answers. */
  versionGoneMessage: string;
  /** `nc:lock-timeout` of a files_lock user lock, which has no timeout. */
  userLockTimeout: string;
  /** The trash bin's PROPFIND also answers `nc:trashbin-deleted-by-id`. */
  trashbinDeletedById: boolean;
  /** Headers every authenticated WebDAV answer carries. */
  userIdHeader: boolean;
  /**
   * An event that repeats without end past 3500 occurrences: 34 leaves it out of a
   * calendar-query and answers the rest; 29 fails every such query on the calendar (500).
   */
  runawayRecurrenceLeftOut: boolean;
  /** A PUT of a name this long or longer fails with 500 (29: its `.part` temp name passes 255 bytes). */
  putNameLimitBytes: number | undefined;
  /** The exception of a MOVE of a received share into another share (403). */
  shareIntoShareException: string;
  /** A wrong password on an OCS route is answered in JSON when JSON was asked for (34); 29 always answers XML. */
  ocsUnauthorisedAsked: boolean;
  /** A SEARCH whose scope is spelled in NFD finds what is below it (29); 34 finds nothing. */
  searchNfdScopeMatches: boolean;
  /** The components of a calendar made by `occ dav:create-calendar`. */
  calendarComponents: readonly string[];
  /**
   * An OCS request refused before any app answers it (a wrong password, an unknown route)
   * shows its `X-Request-Id` (34); 29 shows none (request-id.ts).
   */
  ocsRefusalsRequestId: boolean;
  /** An activity names a calendar or address book by a string id (34); 29 by a number. */
  collectionIdAsString: boolean;
}

export const EX_INVALID_PATH = 'OCA\\DAV\\Connector\\Sabre\\Exception\\InvalidPath';
const EX_FILE_LOCKED = 'OCA\\DAV\\Connector\\Sabre\\Exception\\FileLocked';

const TRAITS: Record<Series, SeriesTraits> = {
  34: {
    version: { major: 34, minor: 0, micro: 1 },
    partName: () => ({
      status: 400,
      exception: EX_INVALID_PATH,
      message: '".part" is a forbidden file type.',
    }),
    htaccess: {
      status: 500,
      exception: 'OCP\\Files\\ForbiddenException',
      message: 'Invalid path: files/.htaccess',
    },
    htaccessMkcol: {
      status: 400,
      exception: EX_INVALID_PATH,
      message: 'Filename is a reserved word',
    },
    notFoundPrefix: '/',
    versionGoneMessage:
      'A type error occurred. For more details, please refer to the logs, which provide additional context about the type error.',
    userLockTimeout: '-60',
    trashbinDeletedById: true,
    userIdHeader: true,
    runawayRecurrenceLeftOut: true,
    putNameLimitBytes: undefined,
    shareIntoShareException: 'OCA\\DAV\\Connector\\Sabre\\Exception\\Forbidden',
    ocsUnauthorisedAsked: true,
    searchNfdScopeMatches: false,
    calendarComponents: ['VEVENT', 'VTODO', 'VJOURNAL'],
    ocsRefusalsRequestId: true,
    collectionIdAsString: true,
  },
  29: {
    version: { major: 29, minor: 0, micro: 5 },
    partName: (name) => ({
      status: 423,
      exception: EX_FILE_LOCKED,
      message: `"${name}" is locked`,
    }),
    htaccess: { status: 403, exception: 'Sabre\\DAV\\Exception\\Forbidden', message: '' },
    notFoundPrefix: '//',
    versionGoneMessage:
      'stream_get_meta_data(): Argument #1 ($stream) must be of type resource, bool given',
    userLockTimeout: '0',
    trashbinDeletedById: false,
    userIdHeader: false,
    runawayRecurrenceLeftOut: false,
    putNameLimitBytes: 228,
    shareIntoShareException: 'Sabre\\DAV\\Exception\\Forbidden',
    ocsUnauthorisedAsked: false,
    searchNfdScopeMatches: true,
    calendarComponents: ['VEVENT', 'VTODO'],
    ocsRefusalsRequestId: false,
    collectionIdAsString: false,
  },
};

export function traitsOf(series: Series): SeriesTraits {
  return TRAITS[series];
}

/** `34.0.1` */
export function versionOf(traits: SeriesTraits): string {
  const v = traits.version;
  return `${v.major}.${v.minor}.${v.micro}`;
}
