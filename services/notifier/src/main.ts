import './instrument';
import { loadConfigOrExit } from '@costgov/config';
import { runStandalone } from '@costgov/runtime';
import { notifierConfig } from './config';
import { notifierModule } from './module';

// Refuses a bad setting at start, with its name, before anything connects.
loadConfigOrExit(notifierConfig);
void runStandalone(notifierModule(), { grpcPort: 50057 });
