import type { ImgsrvClient } from '../imgsrv';
import { RenderingGate } from './rendering-gate';

const INSTANCE = { study: '1.2.3', series: '1.2.3.4', instance: '1.2.3.4.5' };

function gate(decodeRefusal: () => Promise<string | null>) {
  const imgsrv = { decodeRefusal: jest.fn(decodeRefusal) };
  return { gate: new RenderingGate(imgsrv as unknown as ImgsrvClient), imgsrv };
}

describe('RenderingGate.allows', () => {
  it('allows an instance whose attributes the decoders read safely, asking by its UIDs', async () => {
    const { gate: g, imgsrv } = gate(async () => null);
    expect(await g.allows(INSTANCE)).toBe(true);
    expect(imgsrv.decodeRefusal).toHaveBeenCalledWith(
      { studyInstanceUid: INSTANCE.study, seriesInstanceUid: INSTANCE.series, sopInstanceUid: INSTANCE.instance },
      expect.any(AbortSignal),
    );
  });

  it('refuses an instance with a reason', async () => {
    expect(await gate(async () => 'Rows is UL, not US').gate.allows(INSTANCE)).toBe(false);
  });

  it('refuses when the image server cannot say (an error, an unknown instance)', async () => {
    expect(await gate(async () => Promise.reject(new Error('404'))).gate.allows(INSTANCE)).toBe(false);
  });

  it("refuses a study's or a series' rendering without asking", async () => {
    const { gate: g, imgsrv } = gate(async () => null);
    expect(await g.allows('whole')).toBe(false);
    expect(imgsrv.decodeRefusal).not.toHaveBeenCalled();
  });
});
