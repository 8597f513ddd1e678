// The viewer feature's public surface: what other features may import (see eslint.config.mjs).
export { ViewerModule } from './viewer.module';
export { ViewerService } from './viewer.service';
export type { ViewerGrant } from './viewer.service';
export type { SharedStudy } from './viewer.service';
export type { ViewerTokenDto } from './dto/issue-viewer-token.dto';
