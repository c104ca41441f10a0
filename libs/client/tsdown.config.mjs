import { libraryConfig } from '../build/library.mjs';

export default libraryConfig();
