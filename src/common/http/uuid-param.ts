import { Param, ParseUUIDPipe, PipeTransform } from '@nestjs/common';
import { Errors } from '../errors/api-errors';

/** PostgreSQL's spelling of a uuid, so that a controller can compare the id with stored ones. */
const lowercase: PipeTransform<string, string> = { transform: (id) => id.toLowerCase() };

/**
 * A uuid path parameter, lowercased; anything else is `404 {message: "<What> not found."}`,
 * never 400/500.
 */
export function UuidParam(name: string, what: string) {
  return Param(name, new ParseUUIDPipe({ exceptionFactory: () => Errors.notFound(what) }), lowercase);
}
