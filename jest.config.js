// Unit tests need no database; db, integration, e2e and fault tests run against a real one
// (SQLite by default, PostgreSQL when DATABASE_URL says postgres://).
const base = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { diagnostics: false }] },
  moduleFileExtensions: ['ts', 'js', 'json'],
};
module.exports = {
  testTimeout: 30000,
  // Three files at a time on a 2-core machine: much of the suite's time is real time that tests
  // wait out (sends paced at the real 10/s, processes started and killed, Chromium loading a
  // page), which fewer workers would spend idle. Measured on 2 cores: 475 s with two, 355 s with
  // three, the CPU then busy 147% of the 200%. No test reads the machine's speed, so sharing the
  // cores slows a file and fails none.
  maxWorkers: 3,
  projects: [
    { ...base, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    { ...base, displayName: 'db', testMatch: ['<rootDir>/test/db/**/*.test.ts', '<rootDir>/test/integration/**/*.test.ts'] },
    // its globalSetup installs Chromium (scripts/ensure-chromium.sh) when missing; Jest runs it
    // only when an e2e test file is selected
    { ...base, displayName: 'e2e', testMatch: ['<rootDir>/test/e2e/**/*.test.ts'], globalSetup: '<rootDir>/test/setup/global-setup.ts' },
    { ...base, displayName: 'faults', testMatch: ['<rootDir>/test/faults/**/*.test.ts'] },
  ],
};
