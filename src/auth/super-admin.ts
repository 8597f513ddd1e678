import { PasswordHasher } from '../common/auth/password-hasher';
import type { AccountsRepository } from './accounts.repository';

/** A refusal the operator reads as it is (the CLI prints its message, not a stack). */
export class UserFacingError extends Error {
  readonly userFacing = true;
}

/** A super admin to create: the email lower-cased, email and name trimmed. */
export interface NewSuperAdmin {
  email: string;
  password: string;
  name: string;
}

/** Checks and normalises the operator's input before anything is opened. */
export function checkSuperAdmin(input: NewSuperAdmin): NewSuperAdmin {
  const email = input.email.trim().toLowerCase();
  const name = input.name.trim();
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new UserFacingError(`Invalid email: ${input.email}`);
  if (input.password.length < 8) throw new UserFacingError('The password must be at least 8 characters.');
  if (!name || name.length > 255) throw new UserFacingError('The name must be 1 to 255 characters.');
  return { email, password: input.password, name };
}

/** Creates the super admin (checked by `checkSuperAdmin`) and returns its id; an email taken is refused. */
export async function createSuperAdmin(
  accounts: Pick<AccountsRepository, 'insertSuperAdmin'>,
  admin: NewSuperAdmin,
  hasher: Pick<PasswordHasher, 'hash'> = new PasswordHasher(),
): Promise<string> {
  const id = await accounts.insertSuperAdmin(admin.name, admin.email, await hasher.hash(admin.password));
  if (id === null) throw new UserFacingError(`A user with email ${admin.email} already exists.`);
  return id;
}
