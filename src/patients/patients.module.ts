import { Module } from '@nestjs/common';
import { ListModule } from '../database/list';
import { StudiesModule } from '../studies';
import { PatientsController } from './patients.controller';
import { PatientsRepository } from './patients.repository';
import { PatientsService } from './patients.service';

@Module({
  imports: [StudiesModule, ListModule],
  controllers: [PatientsController],
  providers: [PatientsRepository, PatientsService],
})
export class PatientsModule {}
