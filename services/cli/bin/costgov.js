#!/usr/bin/env node
'use strict';
// The CLI is TypeScript run by tsx, like every service here; this launcher registers tsx and starts it.
require('tsx/cjs');
require('../src/main.ts');
