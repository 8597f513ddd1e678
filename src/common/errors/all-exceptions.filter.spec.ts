import { isDependencyDown } from './all-exceptions.filter';

describe('isDependencyDown', () => {
  it.each([
    ['a refused connection', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' })],
    [
      'a PostgreSQL shutdown inside a query error',
      { name: 'QueryFailedError', message: 'x', driverError: { code: '57P01', message: 'terminating connection' } },
    ],
    [
      'ioredis giving up',
      Object.assign(new Error('Reached the max retries per request limit'), { name: 'MaxRetriesPerRequestError' }),
    ],
    ['a closed Redis connection', new Error('Connection is closed.')],
    [
      'a statement cancelled by the statement timeout',
      {
        name: 'QueryFailedError',
        message: 'x',
        driverError: { code: '57014', message: 'canceling statement due to statement timeout' },
      },
    ],
  ])('recognises %s', (_, error) => {
    expect(isDependencyDown(error)).toBe(true);
  });

  it('does not hide programming errors', () => {
    expect(isDependencyDown(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe(false);
    expect(isDependencyDown({ name: 'QueryFailedError', driverError: { code: '42703' } })).toBe(false);
  });
});
