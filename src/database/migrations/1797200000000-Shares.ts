import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Share links of a study (decisions.md 3d) and the share an access-log entry was made through.
 * A share keeps only the SHA-256 of its token and a scrypt hash of its passcode. `share_id` is added
 * with IF NOT EXISTS: the access trail's own work may add the same column.
 */
export class Shares1797200000000 implements MigrationInterface {
  name = 'Shares1797200000000';

  public async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE shares (
        id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
        tenant_id uuid NOT NULL REFERENCES tenants (id) ON DELETE RESTRICT,
        study_id uuid NOT NULL REFERENCES studies (id) ON DELETE CASCADE,
        token_hash char(64) NOT NULL,
        passcode_hash varchar(255) NULL,
        expires_at timestamptz NOT NULL,
        max_uses integer NOT NULL CHECK (max_uses BETWEEN 1 AND 1000),
        uses integer NOT NULL DEFAULT 0 CHECK (uses >= 0 AND uses <= max_uses),
        last_used_at timestamptz NULL,
        revoked_at timestamptz NULL,
        note varchar(255) NULL,
        created_by_user_id uuid NULL REFERENCES users (id) ON DELETE SET NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX shares_token_hash_key ON shares (token_hash)`);
    await q.query(`CREATE INDEX shares_study_created_idx ON shares (study_id, created_at)`);
    await q.query(`ALTER TABLE access_logs ADD COLUMN IF NOT EXISTS share_id uuid NULL`);
  }

  public async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS shares`);
  }
}
