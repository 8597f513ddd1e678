import { ValidationError } from '@nestjs/common';
import { flattenValidationErrors } from './validation-errors';

describe('flattenValidationErrors', () => {
  it('keys nested errors by their dotted path', () => {
    const errors: ValidationError[] = [
      {
        property: 'assets',
        value: {},
        children: [
          {
            property: 'background',
            value: {},
            children: [
              { property: 'opacity', value: 2, constraints: { max: 'opacity must not be greater than 1' }, children: [] },
            ],
          },
        ],
      },
    ];
    expect(flattenValidationErrors(errors)).toEqual({ 'assets.background.opacity': ['opacity must not be greater than 1'] });
  });

  it('reports only "required" for a missing field', () => {
    const errors: ValidationError[] = [
      {
        property: 'email',
        value: undefined,
        constraints: { maxLength: 'too long', isNotEmpty: 'The email field is required.' },
        children: [],
      },
    ];
    expect(flattenValidationErrors(errors)).toEqual({ email: ['The email field is required.'] });
  });
});
