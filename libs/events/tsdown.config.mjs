import { libraryConfig } from '../build/library.mjs';

// The AsyncAPI document ships too: `import document from '@costgov/events/asyncapi.json'`.
export default libraryConfig({ files: ['asyncapi.json'] });
