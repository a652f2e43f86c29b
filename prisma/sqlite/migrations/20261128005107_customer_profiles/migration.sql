-- CreateTable
CREATE TABLE "CustomerProfile" (
    "shopId" TEXT NOT NULL,
    "customerId" TEXT NOT NULL,
    "email" TEXT,
    "data" TEXT NOT NULL,
    "digest" TEXT,
    "updatedAt" DATETIME NOT NULL,

    PRIMARY KEY ("shopId", "customerId"),
    CONSTRAINT "CustomerProfile_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop" ("id") ON DELETE CASCADE ON UPDATE CASCADE
);

-- CreateIndex
CREATE INDEX "CustomerProfile_shopId_email_idx" ON "CustomerProfile"("shopId", "email");


-- Keep what was announced: each digest, and its consent state as a fact older than any real one
INSERT INTO "CustomerProfile" ("shopId", "customerId", "email", "data", "digest", "updatedAt")
SELECT "shopId", "customerId", NULL,
  CASE WHEN "consentState" IS NULL THEN '{"formerEmails":[],"tags":{}}'
  ELSE json_object('formerEmails', json('[]'), 'tags', json('{}'), 'emailConsent',
    json_object('at', '1970-01-01T00:00:00.000Z', 'value', json_object('state', "consentState", 'optInLevel', NULL, 'accepts', NULL))) END,
  "digest", "updatedAt"
FROM "CustomerDigest";

-- DropTable
PRAGMA foreign_keys=off;
DROP TABLE "CustomerDigest";
PRAGMA foreign_keys=on;

