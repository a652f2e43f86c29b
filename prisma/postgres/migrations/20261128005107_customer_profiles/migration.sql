-- CreateTable
CREATE TABLE "CustomerProfile" (
    "shopId" TEXT NOT NULL,
    "customerId" TEXT NOT NULL,
    "email" TEXT,
    "data" TEXT NOT NULL,
    "digest" TEXT,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "CustomerProfile_pkey" PRIMARY KEY ("shopId","customerId")
);

-- CreateIndex
CREATE INDEX "CustomerProfile_shopId_email_idx" ON "CustomerProfile"("shopId", "email");

-- AddForeignKey
ALTER TABLE "CustomerProfile" ADD CONSTRAINT "CustomerProfile_shopId_fkey" FOREIGN KEY ("shopId") REFERENCES "Shop"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- Keep what was announced: each digest, and its consent state as a fact older than any real one
INSERT INTO "CustomerProfile" ("shopId", "customerId", "email", "data", "digest", "updatedAt")
SELECT "shopId", "customerId", NULL,
  CASE WHEN "consentState" IS NULL THEN '{"formerEmails":[],"tags":{}}'
  ELSE json_build_object('formerEmails', json_build_array(), 'tags', json_build_object(), 'emailConsent',
    json_build_object('at', '1970-01-01T00:00:00.000Z', 'value', json_build_object('state', "consentState", 'optInLevel', NULL, 'accepts', NULL)))::text END,
  "digest", "updatedAt"
FROM "CustomerDigest";

-- DropForeignKey
ALTER TABLE "CustomerDigest" DROP CONSTRAINT "CustomerDigest_shopId_fkey";

-- DropTable
DROP TABLE "CustomerDigest";
