import { describe, expect, it } from "vitest";
import { resolveVideoSize } from "../../src/providers/video/index.js";

describe("resolveVideoSize", () => {
  it.each([
    [{}, undefined],
    [{ size: "1280x720" }, { width: 1280, height: 720 }],
    [{ size: "853x480" }, { width: 853, height: 480 }],
    [{ resolution: "720p", aspect_ratio: "16:9" }, { width: 1280, height: 720 }],
    [{ resolution: "720p", aspect_ratio: "9:16" }, { width: 720, height: 1280 }],
    [{ resolution: "480p", aspect_ratio: "16:9" }, { width: 854, height: 480 }],
    [{ resolution: "768p", aspect_ratio: "16:9" }, { width: 1366, height: 768 }],
    [{ resolution: "1080p", aspect_ratio: "21:9" }, { width: 2520, height: 1080 }],
    [{ resolution: "1080p", aspect_ratio: "9:21" }, { width: 1080, height: 2520 }],
    [{ resolution: "480p", aspect_ratio: "4:3" }, { width: 640, height: 480 }],
    [{ resolution: "720p", aspect_ratio: "3:2" }, { width: 1080, height: 720 }],
    [{ resolution: "720p", aspect_ratio: "2:3" }, { width: 720, height: 1080 }],
    [{ resolution: "720p", aspect_ratio: "1:1" }, { width: 720, height: 720 }],
    [{ resolution: "1K", aspect_ratio: "1:1" }, { width: 1024, height: 1024 }],
    [{ resolution: "1K", aspect_ratio: "16:9" }, { width: 1024, height: 576 }],
    [{ resolution: "2K", aspect_ratio: "3:4" }, { width: 1536, height: 2048 }],
    [{ resolution: "4K", aspect_ratio: "16:9" }, { width: 4096, height: 2304 }],
    [{ resolution: "1080p" }, { width: 1920, height: 1080 }],
    [{ aspect_ratio: "9:16" }, { width: 720, height: 1280 }],
    [{ size: "1920x1080", resolution: "1080p", aspect_ratio: "16:9" }, { width: 1920, height: 1080 }],
    [{ size: "854x480", aspect_ratio: "16:9" }, { width: 854, height: 480 }],
    [{ size: "720x1280", resolution: "720p" }, { width: 720, height: 1280 }],
  ])("%j → %j", (input, size) => {
    expect(resolveVideoSize(input)).toEqual({ ok: true, size });
  });

  it.each([
    [{ size: "1280x720", aspect_ratio: "9:16" }, "size 1280x720 conflicts with aspect_ratio 9:16."],
    [{ size: "1792x1024", aspect_ratio: "16:9" }, "size 1792x1024 conflicts with aspect_ratio 16:9."],
    [{ size: "1280x720", resolution: "1080p" }, "size 1280x720 conflicts with resolution 1080p."],
    [{ size: "1920x1080", resolution: "1K" }, "size 1920x1080 conflicts with resolution 1K."],
    [{ size: "1280*720" }, "size must be WIDTHxHEIGHT with sides from 1 to 16384 pixels."],
    [{ size: "0x720" }, "size must be WIDTHxHEIGHT with sides from 1 to 16384 pixels."],
    [{ size: "20000x720" }, "size must be WIDTHxHEIGHT with sides from 1 to 16384 pixels."],
    [{ size: " 1280x720" }, "size must be WIDTHxHEIGHT with sides from 1 to 16384 pixels."],
    [{ resolution: "720" }, "resolution must be one of 480p, 720p, 768p, 1080p, 1K, 2K, 4K."],
    [{ aspect_ratio: "16/9" }, "aspect_ratio must be one of 16:9, 9:16, 1:1, 4:3, 3:4, 3:2, 2:3, 21:9, 9:21."],
  ])("%j is refused", (input, error) => {
    expect(resolveVideoSize(input)).toEqual({ ok: false, error });
  });
});
