import { createHmac, timingSafeEqual } from 'crypto';

/**
 * What a viewer token grants, stored in Redis under `viewer:<token>` for VIEWER_TOKEN_TTL seconds.
 * One shape for both kinds of token: a user's (reads its study, the issuer's scope and the same
 * patient's other studies in the clinic) and a share's (`share_id` set: reads its one study).
 */
export interface ViewerSession {
  /** The user who asked for the token; for a share's token, the share's creator (whose account and clinic must stay active). */
  user_id: string;
  /** The clinic of the study the token was issued for. */
  tenant_id: string;
  /**
   * The issuer's unit when the token was issued (null for a clinic or super admin, and for a share's
   * token): a user's token is bound to it and stops when the user moves to another unit.
   */
  unit_id: string | null;
  /** The study the token was issued for. */
  study_id: string;
  /** That study's DICOM Patient ID: the same patient's studies in the clinic are its priors. */
  patient_id: string;
  /** Set for a share's token: it reads `study_id` only. */
  share_id: string | null;
  /** Epoch milliseconds; checked on every validation, cached or not. */
  expires_at: number;
}

/**
 * Records are signed (HMAC-SHA256 with a key derived from JWT_SECRET, over the token and the JSON),
 * so a value someone else put in Redis, or a record copied from another token's key, is no token.
 */
export class ViewerTokenRecords {
  private readonly key: Buffer;

  constructor(jwtSecret: string) {
    this.key = createHmac('sha256', jwtSecret).update('pacs viewer token record v1').digest();
  }

  /** The value stored at the token's key: `<json>.<signature>`. */
  seal(token: string, session: ViewerSession): string {
    const json = JSON.stringify(session);
    return `${json}.${this.sign(token, json)}`;
  }

  /** The session of a stored value, or undefined when it is not one this service wrote for this token. */
  open(token: string, stored: string): ViewerSession | undefined {
    const dot = stored.lastIndexOf('.');
    if (dot <= 0) return undefined;
    const json = stored.slice(0, dot);
    const given = Buffer.from(stored.slice(dot + 1), 'base64url');
    const expected = Buffer.from(this.sign(token, json), 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    return parseSession(json);
  }

  private sign(token: string, json: string): string {
    return createHmac('sha256', this.key).update(token).update('\n').update(json).digest('base64url');
  }
}

function parseSession(json: string): ViewerSession | undefined {
  try {
    const value = JSON.parse(json) as Partial<ViewerSession>;
    if (
      typeof value?.user_id === 'string' &&
      typeof value.tenant_id === 'string' &&
      (value.unit_id === null || typeof value.unit_id === 'string') &&
      typeof value.study_id === 'string' &&
      typeof value.patient_id === 'string' &&
      typeof value.expires_at === 'number' &&
      (value.share_id === null || typeof value.share_id === 'string')
    ) {
      return value as ViewerSession;
    }
  } catch {
    // Signed but unreadable cannot happen unless the format changed: no session.
  }
  return undefined;
}
