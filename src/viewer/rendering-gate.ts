import { Injectable, Logger } from '@nestjs/common';
import { ImgsrvClient } from '../imgsrv';
import { RenderedInstance } from './study-uids';

// nginx waits for the gate: past this, an image server that cannot say what the instance is is a refusal.
const ATTRIBUTES_TIMEOUT_MS = 5_000;

/**
 * Whether a DICOMweb rendering (study-uids.ts renderingOf) may reach the image server's decoders:
 * an instance's or a frame's when its attributes are none the decoders fail on (ImgsrvClient.decodeRefusal,
 * one WADO-RS metadata call); a study's or a series' never, since the plugin picks their instance.
 * Any failure to tell is a refusal. OHIF reads frames and decodes them itself: only other clients
 * ask for renderings, and each costs a decode in the image server anyway.
 */
@Injectable()
export class RenderingGate {
  private readonly logger = new Logger(RenderingGate.name);

  constructor(private readonly imgsrv: ImgsrvClient) {}

  async allows(rendering: RenderedInstance | 'whole'): Promise<boolean> {
    if (rendering === 'whole') return false;
    try {
      const refusal = await this.imgsrv.decodeRefusal(
        { studyInstanceUid: rendering.study, seriesInstanceUid: rendering.series, sopInstanceUid: rendering.instance },
        AbortSignal.timeout(ATTRIBUTES_TIMEOUT_MS),
      );
      if (refusal) this.logger.warn(`Rendering of instance ${rendering.instance} refused: ${refusal}`);
      return refusal === null;
    } catch (error) {
      this.logger.warn(`Rendering of instance ${rendering.instance} refused, its attributes unread: ${(error as Error)?.message ?? error}`);
      return false;
    }
  }
}
