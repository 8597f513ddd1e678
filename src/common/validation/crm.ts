import { StringRules } from './fields';

/** Professional registration: 4 to 6 digits, `/`, two uppercase letters (the state), e.g. 123456/SP. */
export const CRM_PATTERN = /^[0-9]{4,6}\/[A-Z]{2}$/;

export const CRM_MESSAGE = 'The crm field must have the format NNNN/SS to NNNNNN/SS (4 to 6 digits, "/", 2 uppercase letters).';

export function IsCrm() {
  return StringRules('crm', { pattern: CRM_PATTERN, patternMessage: CRM_MESSAGE });
}
