import Redis from 'ioredis';
import { createRedisClient } from '../../src/common/redis/redis.module';
import { loadConfig } from '../../src/config/environment';

describe('the service Redis client', () => {
  let redis: Redis;

  beforeAll(async () => {
    redis = createRedisClient(loadConfig());
    await redis.ping();
  });

  afterAll(async () => {
    await redis.quit();
  });

  it('sends the commands of one event-loop turn in one write, each answered in order', async () => {
    const stream = (redis as unknown as { stream: { write: (...args: unknown[]) => boolean } }).stream;
    const write = stream.write.bind(stream);
    let writes = 0;
    stream.write = (...args: unknown[]) => {
      writes += 1;
      return write(...args);
    };
    try {
      await redis.set('pipelining:present', '1', 'EX', 60);
      writes = 0;
      const keys = Array.from({ length: 50 }, (_, i) => (i % 7 === 0 ? 'pipelining:present' : `pipelining:absent:${i}`));
      const answers = await Promise.all(keys.map((key) => redis.exists(key)));
      expect(answers).toEqual(keys.map((key) => (key === 'pipelining:present' ? 1 : 0)));
      expect(writes).toBe(1);
    } finally {
      stream.write = write;
      await redis.del('pipelining:present');
    }
  });
});
