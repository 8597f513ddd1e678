import { ValidationError } from '@nestjs/common';
import { Errors } from './api-errors';

/** Flattens class-validator's tree into `{ "a.b.c": [messages] }` with the request's field names. */
export function flattenValidationErrors(
  errors: ValidationError[],
  parent = '',
  into: Record<string, string[]> = {},
): Record<string, string[]> {
  for (const error of errors) {
    const path = parent ? `${parent}.${error.property}` : error.property;
    if (error.constraints) {
      // A missing field fails every rule; "is required" alone is the useful message then.
      const required = error.constraints.isDefined ?? error.constraints.isNotEmpty;
      const messages =
        error.value === undefined || error.value === null || error.value === ''
          ? [required ?? Object.values(error.constraints)[0]]
          : Object.values(error.constraints);
      into[path] = [...(into[path] ?? []), ...messages];
    }
    if (error.children?.length) flattenValidationErrors(error.children, path, into);
  }
  return into;
}

export function validationExceptionFactory(errors: ValidationError[]) {
  return Errors.validation(flattenValidationErrors(errors));
}
