
FRAME_BLOCK
uniform sampler2DShadow u_shadow;
uniform vec3 u_albedo;          // linear base colour
uniform vec3 u_albedo2;         // linear second tone of the texture
uniform int u_object_id;
uniform int u_part_id;

in vec3 v_world;
in vec3 v_normal;
in vec2 v_uv;
layout(location = 0) out vec4 f_color;
layout(location = 1) out int f_object;
layout(location = 2) out int f_part;

// PCF taps (unit disc; the ground takes GROUND_TAPS (4 or 8), the objects the first 4), rotated
// per pixel by a 4x4 pattern of angles (deterministic: a function of the pixel position only)
// so that the few taps give a smooth penumbra instead of bands.
const vec2 DISC[8] = vec2[](
    vec2(-0.613, 0.617), vec2(0.170, -0.040), vec2(-0.299, -0.792), vec2(0.645, 0.493),
    vec2(-0.651, -0.718), vec2(0.421, 0.027), vec2(-0.817, -0.271), vec2(0.977, -0.295));
const vec2 ROT[16] = vec2[](
    vec2(0.9808, 0.1951), vec2(-0.9808, -0.1951), vec2(0.5556, 0.8315), vec2(-0.5556, -0.8315),
    vec2(0.1951, -0.9808), vec2(-0.1951, 0.9808), vec2(0.8315, -0.5556), vec2(-0.8315, 0.5556),
    vec2(0.1951, 0.9808), vec2(-0.1951, -0.9808), vec2(0.8315, 0.5556), vec2(-0.8315, -0.5556),
    vec2(0.9808, -0.1951), vec2(-0.9808, 0.1951), vec2(0.5556, -0.8315), vec2(-0.5556, 0.8315));

#if MATERIAL == 2
#define TAPS GROUND_TAPS
#else
#define TAPS 4
#endif

float shadow_at(vec3 p, vec3 n) {
#if MATERIAL != 2
    // the lookup point moves off the surface enough that the whole (tilted) PCF kernel stays in
    // front of it: acne-free self-shadowing (the ground is no caster, it needs no offset)
    float c = clamp(dot(n, u_key.xyz), 0.05, 1.0);
    p += n * (u_shadow_par.y + u_shadow_par.z * min(sqrt(1.0 - c * c) / c, 3.0));
#endif
    vec4 ls = u_light_vp * vec4(p, 1.0);
    vec3 s = ls.xyz / ls.w * 0.5 + 0.5;
    s.z = min(s.z, 1.0);  // receivers beyond the casters' depth range compare to 'far': lit
    ivec2 q = ivec2(gl_FragCoord.xy) & 3;
    vec2 cs = ROT[q.x + 4 * q.y] * u_shadow_par.x;
    mat2 rot = mat2(cs.x, cs.y, -cs.y, cs.x);
    float acc = 0.0;
    for (int i = 0; i < TAPS; ++i)
        acc += texture(u_shadow, vec3(s.xy + rot * DISC[i], s.z));
    return acc * (1.0 / float(TAPS));   // outside the map: the border compares as lit
}

#if TEXTURE != 0
// 0 = base tone, 1 = second tone (edges anti-aliased with fwidth)
float pattern(vec2 uv) {
    vec2 t = uv * (1.0 / PERIOD);
    vec2 w = max(fwidth(t), vec2(1e-4));
#if TEXTURE == 1       // vstripped: bands across u
    return 1.0 - smoothstep(-w.x, w.x, abs(fract(t.x) - 0.5) - 0.25);
#elif TEXTURE == 3     // stripped: bands across v
    return 1.0 - smoothstep(-w.y, w.y, abs(fract(t.y) - 0.5) - 0.25);
#elif TEXTURE == 2     // checkered
    vec2 a = smoothstep(-w, w, abs(fract(t) - 0.5) - 0.25);
    return a.x + a.y - 2.0 * a.x * a.y;  // xor
#else                  // dotted
    float fw = max(w.x, w.y);
    return 1.0 - smoothstep(0.28 - fw, 0.28 + fw, length(fract(t) - 0.5));
#endif
}
#endif

#if MATERIAL == 1
vec3 env(vec3 r) {  // procedural studio: bright horizon, darker zenith, dark grey floor
    vec3 sky = mix(vec3(1.3), vec3(0.40), sqrt(max(r.z, 0.0)));
    vec3 floor_ = mix(vec3(0.26), vec3(0.12), min(-r.z * 3.0, 1.0));
    return mix(floor_, sky, smoothstep(-0.02, 0.02, r.z));
}
#endif

void main() {
    f_object = u_object_id;
    f_part = u_part_id;
    vec3 n = normalize(v_normal);
    if (!gl_FrontFacing) n = -n;   // back face of an open surface: two-sided lighting
    vec3 albedo = u_albedo;
#if TEXTURE != 0
    albedo = mix(albedo, u_albedo2, pattern(v_uv));
#endif
    float sh = shadow_at(v_world, n);
    vec3 lk = u_key.xyz, lf = u_fill.xyz;
    float light = u_bg.w * (0.55 + 0.45 * (n.z * 0.5 + 0.5))   // hemispherical ambient
                + u_key.w * max(dot(n, lk), 0.0) * sh + u_fill.w * max(dot(n, lf), 0.0);
#if MATERIAL == 2      // ground: diffuse, fading into the background far from the camera
    vec3 outc = pow(albedo * light, vec3(1.0 / 2.2));
    float fade = (length(v_world.xy - u_ground_par.xy) - u_ground_par.z)
               / (u_ground_par.w - u_ground_par.z);
    outc = mix(outc, u_bg.rgb, clamp(fade, 0.0, 1.0));
#else
    vec3 v = normalize(u_eye.xyz - v_world);
    float nhk = max(dot(n, normalize(lk + v)), 0.0);
    float nhf = max(dot(n, normalize(lf + v)), 0.0);
#if MATERIAL == 1      // metal: dim diffuse, tinted environment reflection, sharp highlights
    vec3 refl = albedo * env(reflect(-v, n)) * u_eye.w * (0.9 + 0.1 * pow(1.0 - max(dot(n, v), 0.0), 5.0))
              * (0.85 + 0.15 * sh);
    float spec = u_key.w * sh * (pow(nhk, 80.0) * 4.0 + pow(nhk, 12.0) * 0.35)
               + u_fill.w * (pow(nhf, 80.0) * 1.5 + pow(nhf, 12.0) * 0.2);
    vec3 col = albedo * 0.25 * light + refl + mix(albedo, vec3(1.0), 0.4) * spec;
#else                  // rubber: matte, weak broad highlight
    float spec = 0.07 * (u_key.w * sh * pow(nhk, 10.0) + u_fill.w * pow(nhf, 10.0));
    vec3 col = albedo * light + vec3(spec);
#endif
    vec3 outc = pow(max(col, 0.0), vec3(1.0 / 2.2));
#endif
    f_color = vec4(clamp(outc, 0.0, 1.0), 1.0);
}
