import type { RecordPlace } from '../common/auth/data-scope';
import type { StudiesRepository } from '../studies';
import { MAX_CONCURRENT_LOOKUPS, MAX_QUEUED_UIDS, StudyPlacesCache } from './study-places.cache';

const PLACE: RecordPlace = { tenant_id: 't', unit_id: 'u' };

/** A repository whose lookups stay pending until `release` answers them (known: UIDs starting with 1.). */
function pendingRepository() {
  const calls: Array<{ uids: string[]; answer: () => void }> = [];
  const placesOfStudyUids = jest.fn(
    (uids: string[]) =>
      new Promise<Map<string, RecordPlace[]>>((resolve) =>
        calls.push({
          uids,
          answer: () => resolve(new Map(uids.filter((uid) => uid.startsWith('1.')).map((uid) => [uid, [PLACE]]))),
        }),
      ),
  );
  const release = async () => {
    for (const call of calls.splice(0)) call.answer();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { repository: { placesOfStudyUids } as unknown as StudiesRepository, placesOfStudyUids, calls, release };
}

describe('StudyPlacesCache (the flood guard)', () => {
  it('looks up a UID once, then answers from memory, the unknown ones too', async () => {
    const { repository, placesOfStudyUids, release } = pendingRepository();
    const cache = new StudyPlacesCache(repository);
    const first = cache.placesOf(['1.1', '2.1']);
    await release();
    expect(await first).toEqual({ places: new Map([['1.1', [PLACE]], ['2.1', []]]), hit: false });
    expect(await cache.placesOf(['1.1', '2.1'])).toEqual({ places: new Map([['1.1', [PLACE]], ['2.1', []]]), hit: true });
    expect(placesOfStudyUids).toHaveBeenCalledTimes(1);
  });

  it(`runs at most ${MAX_CONCURRENT_LOOKUPS} lookups at a time, each for every miss queued meanwhile`, async () => {
    const { repository, placesOfStudyUids, calls, release } = pendingRepository();
    const cache = new StudyPlacesCache(repository);
    const answers = Array.from({ length: 500 }, (_, i) => cache.placesOf([`2.${i}`]));
    expect(calls.map((call) => call.uids.length)).toEqual([1, 1]);
    await release();
    expect(calls.map((call) => call.uids.length)).toEqual([498]);
    await release();
    expect((await Promise.all(answers)).every(({ places }) => places.size === 1)).toBe(true);
    expect(placesOfStudyUids).toHaveBeenCalledTimes(3);
  });

  it('shares one lookup among concurrent misses of one UID', async () => {
    const { repository, placesOfStudyUids, release } = pendingRepository();
    const cache = new StudyPlacesCache(repository);
    const answers = Array.from({ length: 50 }, () => cache.placesOf(['1.7']));
    await release();
    for (const answer of await Promise.all(answers)) expect(answer.places.get('1.7')).toEqual([PLACE]);
    expect(placesOfStudyUids).toHaveBeenCalledTimes(1);
  });

  it(`answers unknown, without a lookup, past ${MAX_QUEUED_UIDS} queued UIDs`, async () => {
    const { repository, calls, release } = pendingRepository();
    const cache = new StudyPlacesCache(repository);
    const queued = Array.from({ length: MAX_QUEUED_UIDS + MAX_CONCURRENT_LOOKUPS }, (_, i) => cache.placesOf([`1.${i}`]));
    const refused = await cache.placesOf(['1.999999']);
    expect(refused.places.get('1.999999')).toEqual([]);
    while (calls.length > 0) await release();
    await Promise.all(queued);
    // Not remembered as unknown: asked again once the queue has room, it is found.
    const again = cache.placesOf(['1.999999']);
    await release();
    expect((await again).places.get('1.999999')).toEqual([PLACE]);
  });

  it('passes a failed lookup on to every waiter, and remembers nothing', async () => {
    const placesOfStudyUids = jest.fn().mockRejectedValueOnce(new Error('pg down')).mockResolvedValue(new Map([['1.1', [PLACE]]]));
    const cache = new StudyPlacesCache({ placesOfStudyUids } as unknown as StudiesRepository);
    await expect(cache.placesOf(['1.1'])).rejects.toThrow('pg down');
    expect((await cache.placesOf(['1.1'])).places.get('1.1')).toEqual([PLACE]);
  });
});
