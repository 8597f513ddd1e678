import { AsyncLocalStorage, AsyncResource, executionAsyncId } from 'async_hooks';
import './async-resource-bind';

describe('AsyncResource#bind without the deprecated asyncResource accessor', () => {
  it('adds no asyncResource property, bound through the instance or the static method', () => {
    const viaInstance = new AsyncResource('test').bind(() => 1);
    const viaStatic = AsyncResource.bind(() => 1);
    expect(Object.getOwnPropertyDescriptor(viaInstance, 'asyncResource')).toBeUndefined();
    expect(Object.getOwnPropertyDescriptor(viaStatic, 'asyncResource')).toBeUndefined();
  });

  it("runs the function in the resource's async scope with its arguments, this and result", () => {
    const resource = new AsyncResource('test');
    const seen: unknown[] = [];
    const bound = resource.bind(function (this: unknown, a: number, b: number) {
      seen.push(executionAsyncId(), this, a, b);
      return a + b;
    });
    const receiver = { name: 'receiver' };
    expect(bound.call(receiver, 2, 3)).toBe(5);
    expect(seen).toEqual([resource.asyncId(), receiver, 2, 3]);
    expect(bound.length).toBe(2);

    // Node's own signature takes a thisArg that @types/node leaves out.
    const bindWithThis = resource.bind as unknown as (
      this: AsyncResource,
      fn: () => unknown,
      thisArg: unknown,
    ) => () => unknown;
    const self = { name: 'bound this' };
    const withThis = bindWithThis.call(
      resource,
      function (this: unknown) {
        return this;
      },
      self,
    );
    expect(withThis.call({ other: true })).toBe(self);
  });

  it('carries the AsyncLocalStorage store of where it was bound to where it is called', () => {
    const storage = new AsyncLocalStorage<string>();
    const bound = storage.run('request 1', () => AsyncResource.bind(() => storage.getStore()));
    expect(storage.getStore()).toBeUndefined();
    expect(storage.run('request 2', () => bound())).toBe('request 1');
  });

  it('refuses what is not a function, as Node.js does', () => {
    expect(() => new AsyncResource('test').bind(42 as never)).toThrow(
      expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }),
    );
  });
});
