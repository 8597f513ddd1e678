import { applyDecorators } from '@nestjs/common';
import { Transform, Type } from 'class-transformer';
import {
  IsBoolean,
  IsDefined,
  IsNotEmpty,
  IsUUID,
  registerDecorator,
  ValidateIf,
  ValidateNested,
  ValidationArguments,
} from 'class-validator';
import isEmail from 'validator/lib/isEmail';
import isIP from 'validator/lib/isIP';

/** Laravel-style label: `tenant_id` -> "tenant id". */
export const fieldLabel = (field: string) => field.replace(/_/g, ' ');

export const trimString = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

/**
 * A uuid as PostgreSQL returns it: lowercase. A request may spell one in uppercase (still a valid
 * uuid), and the services compare request ids with stored ones in JavaScript (a unit's tenant, the
 * caller's own id), where "ABC" !== "abc".
 */
export const lowercaseUuid = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value);

/**
 * Validate only when the key is present. Unlike @IsOptional, an explicit `null` is still
 * validated (and refused by the rules that follow), for fields that may be left out but not cleared.
 */
export const IfPresent = () => ValidateIf((_object, value) => value !== undefined);

/** Validate only when present and not null: for fields that `null` clears. */
export const IfPresentAndNotNull = () => ValidateIf((_object, value) => value !== undefined && value !== null);

export interface StringRuleSet {
  min?: number;
  max?: number;
  maxBytes?: number;
  email?: boolean;
  ip?: boolean;
  pattern?: RegExp;
  patternMessage?: string;
}

/**
 * Characters as PostgreSQL counts them (char_length, varchar(n)): Unicode code points, so a
 * character outside the BMP (an emoji) is one, not the two UTF-16 units of `String.length`.
 * A loop rather than `[...value]`, which would build an array as long as a hostile body.
 */
export function characterCount(value: string): number {
  let count = value.length;
  for (let i = 0; i < value.length - 1; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

/** The rules in order; the first one that fails is the field's only message. */
function stringChecks(field: string, rules: StringRuleSet): Array<[(value: string) => boolean, string]> {
  const label = fieldLabel(field);
  const checks: Array<[(value: string) => boolean, string]> = [];
  if (rules.min !== undefined) {
    checks.push([(v) => characterCount(v) >= rules.min!, `The ${label} field must be at least ${rules.min} characters.`]);
  }
  if (rules.max !== undefined) {
    checks.push([
      (v) => characterCount(v) <= rules.max!,
      `The ${label} field must not be greater than ${rules.max} characters.`,
    ]);
  }
  if (rules.maxBytes !== undefined) {
    checks.push([
      (v) => Buffer.byteLength(v, 'utf8') <= rules.maxBytes!,
      `The ${label} field must not be greater than ${rules.maxBytes} bytes.`,
    ]);
  }
  if (rules.email) checks.push([(v) => isEmail(v), `The ${label} field must be a valid email address.`]);
  if (rules.ip) checks.push([(v) => isIP(v), `The ${label} field must be a valid IPv4 or IPv6 address.`]);
  if (rules.pattern) {
    const pattern = rules.pattern;
    checks.push([(v) => pattern.test(v), rules.patternMessage ?? `The ${label} field format is invalid.`]);
  }
  return checks;
}

/**
 * A field validated by `failure`, which gives the one message of the first rule the value breaks
 * (null: valid), so that a field never reports several messages for one mistake.
 */
export function OneMessage(name: string, failure: (value: unknown) => string | null): PropertyDecorator {
  return (object: object, propertyName: string | symbol) =>
    registerDecorator({
      name,
      target: object.constructor,
      propertyName: propertyName as string,
      validator: {
        validate: (value: unknown) => failure(value) === null,
        defaultMessage: (args?: ValidationArguments) => failure(args?.value) ?? '',
      },
    });
}

/**
 * A string with its rules checked in order, reporting only the first failure: a number sent as
 * a name gets "must be a string", not also "too long". Presence is left to IsDefined/IfPresent.
 */
export function StringRules(field: string, rules: StringRuleSet = {}): PropertyDecorator {
  const notString = `The ${fieldLabel(field)} field must be a string.`;
  const checks = stringChecks(field, rules);
  return OneMessage('stringRules', (value) => {
    if (typeof value !== 'string') return notString;
    return checks.find(([test]) => !test(value))?.[1] ?? null;
  });
}

/** A trimmed, non-empty string of at most `max` characters; required unless `optional`. */
export function TrimmedString(field: string, options: { max?: number; optional?: boolean } = {}) {
  const label = fieldLabel(field);
  return applyDecorators(
    Transform(trimString),
    options.optional ? IfPresent() : IsDefined({ message: `The ${label} field is required.` }),
    IsNotEmpty({ message: options.optional ? `The ${label} field must not be empty.` : `The ${label} field is required.` }),
    StringRules(field, { max: options.max }),
  );
}

/**
 * A uuid of a request, lowercased (lowercaseUuid), else `The <label> field must be a valid UUID.`;
 * the field's presence rule (IsOptional, IfPresent...) is the caller's.
 */
export function UuidValue(label: string) {
  return applyDecorators(Transform(lowercaseUuid), IsUUID('all', { message: `The ${label} field must be a valid UUID.` }));
}

/** A uuid, lowercased; required unless `optional` (present-but-null is refused either way). */
export function UuidField(field: string, options: { optional?: boolean } = {}) {
  const label = fieldLabel(field);
  return applyDecorators(
    options.optional ? IfPresent() : IsDefined({ message: `The ${label} field is required.` }),
    IsNotEmpty({ message: options.optional ? `The ${label} field must not be empty.` : `The ${label} field is required.` }),
    UuidValue(label),
  );
}

/** An optional JSON boolean (no "true" strings); present-but-null is refused. */
export function OptionalBoolean(field: string) {
  return applyDecorators(IfPresent(), IsBoolean({ message: `The ${fieldLabel(field)} field must be true or false.` }));
}

/**
 * A finite JSON number within [min, max] (with `integer`, a whole one), with one message: "must be
 * a number", the range, or "must be an integer".
 */
export function NumberInRange(field: string, min: number, max: number, options: { integer?: boolean } = {}): PropertyDecorator {
  const label = fieldLabel(field);
  return OneMessage('numberInRange', (value) => {
    if (typeof value !== 'number' || !Number.isFinite(value)) return `The ${label} field must be a number.`;
    if (value < min || value > max) return `The ${label} field must be between ${min} and ${max}.`;
    if (options.integer && !Number.isInteger(value)) return `The ${label} field must be an integer.`;
    return null;
  });
}

/**
 * A nested object validated with `type`'s rules (errors keyed `parent.child`), reported with one
 * message when it is not an object at all. class-validator's ValidateNested treats arrays as
 * collections, so an array is first turned into a value it reports like any other non-object.
 */
export function NestedObject(field: string, type: () => Function) {
  return applyDecorators(
    Type(type),
    Transform(({ value }) => (Array.isArray(value) ? 'array' : value)),
    ValidateNested({ message: `The ${fieldLabel(field)} field must be an object.` }),
  );
}
