import { Param, ParseUUIDPipe, PipeTransform } from '@nestjs/common';
import { ApiError, Errors } from '../errors/api-errors';

/** PostgreSQL's spelling of a uuid, so that a controller can compare the id with stored ones. */
const lowercase: PipeTransform<string, string> = { transform: (id) => id.toLowerCase() };

/**
 * A uuid path parameter, lowercased; anything else is `404 {message: "<What> not found."}`, or the
 * route's own 404 when `notFound` is a function (the thumbnails' `Thumbnail not ready`), never 400/500.
 */
export function UuidParam(name: string, notFound: string | (() => ApiError)) {
  const exceptionFactory = typeof notFound === 'string' ? () => Errors.notFound(notFound) : notFound;
  return Param(name, new ParseUUIDPipe({ exceptionFactory }), lowercase);
}
