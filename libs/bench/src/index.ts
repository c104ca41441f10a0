export { startBaseline, startFullPath, startProcess, waitForReady, type Proc } from './processes';
export { figuresOf, printReport, summarize, target, type BenchResult, type Figures } from './report';
