import { Param, ParseUUIDPipe } from '@nestjs/common';
import { Errors } from '../errors/api-errors';

/** A uuid path parameter; anything else is `404 {message: "<What> not found."}`, never 400/500. */
export function UuidParam(name: string, what: string) {
  return Param(name, new ParseUUIDPipe({ exceptionFactory: () => Errors.notFound(what) }));
}
