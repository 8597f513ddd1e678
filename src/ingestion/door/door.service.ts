import { Inject, Injectable, Logger } from '@nestjs/common';
import { TtlCache } from '../../common/cache/ttl-cache';
import { Errors } from '../../common/errors/api-errors';
import { APP_CONFIG } from '../../config/config.module';
import { AppConfig } from '../../config/environment';
import { MetricsService } from '../../operations';
import { normaliseAet } from '../dicom-mapping';
import { secretMatches } from '../webhook-request';
import { clinicOfRegistered, decideDoor, describeSender, DoorDecision } from './door-decision';
import { parseDoorRequest } from './door-request';
import { DoorRepository, RegisteredModality } from './door.repository';

/**
 * How long the door keeps what it read from PostgreSQL (a placed study's clinics, a device's
 * registration): a device registered, moved or removed is honoured within this time.
 */
export const DOOR_CACHE_MS = 5_000;
const DOOR_CACHE_ENTRIES = 20_000;

type Modality = RegisteredModality | null;

/** The study's door, asked by the image server for every instance a device sends (webhook.lua). */
@Injectable()
export class DoorService {
  private readonly logger = new Logger('DicomDoor');
  private readonly studyClinics = new TtlCache<string[]>(DOOR_CACHE_ENTRIES);
  private readonly modalities = new TtlCache<Modality>(DOOR_CACHE_ENTRIES);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly repository: DoorRepository,
    private readonly metrics: MetricsService,
  ) {}

  async decide(secret: unknown, body: unknown): Promise<DoorDecision> {
    if (!secretMatches(secret, this.config.WEBHOOK_SECRET)) throw Errors.webhookUnauthorized();
    const request = parseDoorRequest(body);
    if (!request) throw Errors.doorRequestInvalid();
    const aets = [request.sender, request.holder].map((s) => normaliseAet(s?.aet)).filter((a): a is string => a !== null);
    const [clinicsOfStudy, ...devices] = await Promise.all([
      request.studyInstanceUid ? this.clinicsOfStudy(request.studyInstanceUid) : Promise.resolve([]),
      ...aets.map((aet) => this.modality(aet)),
    ]);
    const byAet = new Map(aets.map((aet, i) => [aet, devices[i] as Modality]));
    const decision = decideDoor(request, {
      clinicsOfStudy,
      clinicOfDevice: (sender) => clinicOfRegistered(sender, byAet.get(normaliseAet(sender.aet) ?? '') ?? null),
    });
    if (!decision.allow) {
      this.metrics.dicomDoorRefusal(decision.reason);
      this.logger.warn(
        `refused an instance of study ${request.studyInstanceUid ?? '(none)'} from ${describeSender(request.sender)}: ${decision.message}`,
      );
    }
    return decision;
  }

  private clinicsOfStudy(uid: string): Promise<string[]> {
    return this.studyClinics.load(uid, async () => {
      const clinics = await this.repository.clinicsOfStudy(uid);
      // Only a placed study is kept: a new one is placed seconds after its first instance, and must
      // not look new for a while longer (its first instances are let in by the filter's own memory).
      if (clinics.length > 0) this.studyClinics.set(uid, clinics, Date.now() + DOOR_CACHE_MS);
      return clinics;
    });
  }

  private modality(aet: string): Promise<Modality> {
    return this.modalities.load(aet, async () => {
      const modality = await this.repository.modality(aet);
      this.modalities.set(aet, modality, Date.now() + DOOR_CACHE_MS);
      return modality;
    });
  }
}
